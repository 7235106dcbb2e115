"""A PCEF (PGW) simulated with python-diameter, for the Gx tests of policing.

    pcef.py PORT ORIGIN_HOST IMSI [rar]

Connects to the PCRF on 127.0.0.1:PORT (Origin-Host pcrf.test, realm test), runs CER,
CCR-I, (with "rar": waits up to 20 s for a RAR and answers it 2001), two CCR-U with usage
reports, CCR-T, then DPR (node stop), and prints one JSON object: the Result-Code and what
each answer installed, removed and granted, and the rules the RAR installed. When the
capabilities exchange does not complete, prints {"ready": false}.
"""
import json
import logging
import sys
import threading

from diameter.message import Avp
from diameter.message.commands import CreditControlRequest
from diameter.message.constants import *
from diameter.node import Node
from diameter.node.application import SimpleThreadingApplication

port, origin_host, imsi = int(sys.argv[1]), sys.argv[2], sys.argv[3]
wait_rar = len(sys.argv) > 4 and sys.argv[4] == "rar"
rar_seen = threading.Event()
rar_rules = []


def handle_request(app, msg):
    """Answers the PCRF's RAR 2001, noting the rules it installs."""
    rar_rules.extend(x.value.decode() for x in msg.find_avps(
        (AVP_TGPP_CHARGING_RULE_INSTALL, VENDOR_TGPP), (AVP_TGPP_CHARGING_RULE_NAME, VENDOR_TGPP)))
    rar_seen.set()
    return app.generate_answer(msg, result_code=E_RESULT_CODE_DIAMETER_SUCCESS)


logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

node = Node(origin_host, "test", vendor_ids=[VENDOR_TGPP])
# The PCRF's answers carry 3GPP AVPs python-diameter's validator does not expect.
node.validate_received_request_avps = False
peer = node.add_peer(f"aaa://pcrf.test:{port};transport=tcp", "test",
                     ip_addresses=["127.0.0.1"], is_persistent=True, is_default=True)
app = SimpleThreadingApplication(APP_3GPP_GX, is_auth_application=True, request_handler=handle_request)
node.add_application(app, [peer])
node.start()
out = {"ready": True, "answers": []}
try:
    try:
        app.wait_for_ready(timeout=5)
    except Exception:
        out["ready"] = False
    if out["ready"]:
        session_id = node.session_generator.next_id()

        def ccr(request_type, number, used=None):
            m = CreditControlRequest()
            m.session_id = session_id
            m.origin_host = origin_host.encode()
            m.origin_realm = b"test"
            m.destination_realm = b"test"
            m.auth_application_id = APP_3GPP_GX
            m.cc_request_type = request_type
            m.cc_request_number = number
            if request_type == E_CC_REQUEST_TYPE_INITIAL_REQUEST:
                m.add_subscription_id(E_SUBSCRIPTION_ID_TYPE_END_USER_IMSI, imsi)
                m.append_avp(Avp.new(AVP_FRAMED_IP_ADDRESS, value=bytes([10, 0, 0, 9])))
                m.append_avp(Avp.new(AVP_CALLED_STATION_ID, value="internet.apn"))
            if used is not None:
                m.append_avp(Avp.new(AVP_TGPP_USAGE_MONITORING_INFORMATION, VENDOR_TGPP, value=[
                    Avp.new(AVP_TGPP_MONITORING_KEY, VENDOR_TGPP, value=b"mk1"),
                    Avp.new(AVP_USED_SERVICE_UNIT, value=[Avp.new(AVP_CC_TOTAL_OCTETS, value=used)]),
                ]))
            a = app.send_request(m, timeout=10)
            names = lambda group: [x.value.decode() for x in a.find_avps(
                (group, VENDOR_TGPP), (AVP_TGPP_CHARGING_RULE_NAME, VENDOR_TGPP))]
            granted = [x.value for x in a.find_avps(
                (AVP_TGPP_USAGE_MONITORING_INFORMATION, VENDOR_TGPP), (AVP_GRANTED_SERVICE_UNIT, 0), (AVP_CC_TOTAL_OCTETS, 0))]
            out["answers"].append({"resultCode": a.result_code,
                                   "installed": names(AVP_TGPP_CHARGING_RULE_INSTALL),
                                   "removed": names(AVP_TGPP_CHARGING_RULE_REMOVE),
                                   "granted": granted[0] if granted else 0})

        ccr(E_CC_REQUEST_TYPE_INITIAL_REQUEST, 0)
        if wait_rar:
            out["rarReceived"] = rar_seen.wait(timeout=20)
            out["rarInstalled"] = rar_rules
        ccr(E_CC_REQUEST_TYPE_UPDATE_REQUEST, 1, used=600)
        ccr(E_CC_REQUEST_TYPE_UPDATE_REQUEST, 2, used=400)
        ccr(E_CC_REQUEST_TYPE_TERMINATION_REQUEST, 3, used=5)
        out["sessionId"] = session_id
finally:
    node.stop(wait_timeout=5)  # sends DPR to the connected peer
print(json.dumps(out))
