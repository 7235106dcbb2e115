%% A PCEF (PGW) on Erlang/OTP's diameter application, a strict second peer for policing's Gx
%% tests (services/policing/internal/gx/peers_test.go, TestErlangDiameterPCEF):
%%
%%   erl -noshell -pa DIR -run pcef main PORT ORIGIN_HOST IMSI [rar]
%%
%% DIR holds this module and the codec of pcef_gx.dia (hack/diameter-peers.sh erlang-pcef
%% compiles both). Connects to the PCRF on 127.0.0.1:PORT (realm test), runs CER/CEA, a
%% CCR-I as a PGW sends it, (with "rar": waits up to 20 s for a RAR and answers it 2001), two
%% CCR-U reporting usage (Event-Trigger USAGE_REPORT, Used-Service-Unit), a CCR-T, then DPR,
%% and prints one JSON object on stdout: each answer's Result-Code, what it installed, removed
%% and granted, its Supported-Features ([Vendor-Id, Feature-List-ID, Feature-List] each) and
%% its errors; the CEA's Vendor-Id; the RAR's rules; errors outside answers.
%%
%% Strict: the service decodes with strict_mbit and strict_arities; answers and requests with
%% decode errors reach the callbacks (answer_errors, request_errors: callback) and every entry
%% of #diameter_packet.errors is reported. Every AVP received (CEA, CCAs, RAR) is also checked
%% against its dictionary's flags: M set exactly when the dictionary sets it (AVPs whose M is
%% "may" excepted), and known at all. Logs go to stderr.
-module(pcef).

-export([main/1]).
%% diameter_app callbacks
-export([peer_up/3, peer_down/3, pick_peer/4, prepare_request/3, prepare_retransmit/3,
         handle_answer/4, handle_error/4, handle_request/3]).

-include_lib("diameter/include/diameter.hrl").

-define(SVC, pcef).
-define(DICT, pcef_gx).
-define(GX, 16777238).
-define(TGPP, 10415).
-define(REALM, <<"test">>).

main([PortS, Host, IMSI | Rest]) ->
    logger:remove_handler(default),
    logger:add_handler(default, logger_std_h, #{config => #{type => standard_error}}),
    register(pcef_main, self()),
    persistent_term:put(pcef_host, list_to_binary(Host)),
    %% The test waits 60 s at most: give up before.
    spawn(fun() -> timer:sleep(40000), io:format(standard_error, "pcef: timed out~n", []), halt(3) end),
    ok = diameter:start(),
    ok = diameter:start_service(?SVC, service(Host)),
    true = diameter:subscribe(?SVC),
    {ok, _} = diameter:add_transport(?SVC, {connect,
        [{transport_module, diameter_tcp},
         {transport_config, [{raddr, {127, 0, 0, 1}}, {rport, list_to_integer(PortS)}, {ip, {127, 0, 0, 1}}]},
         {connect_timer, 60000}]}),
    Out = case wait_up() of
              {up, Cea} -> session(list_to_binary(Host), list_to_binary(IMSI), Rest == ["rar"], Cea);
              {down, Why} -> #{ready => false, errors => [text("no connection: ~p", [Why])]}
          end,
    %% Removing the transport sends a DPR (disconnect_cb's default) and waits for its DPA.
    diameter:remove_transport(?SVC, true),
    wait_down(),
    diameter:stop_service(?SVC),
    io:put_chars([json(Out), $\n]),
    halt(0).

service(Host) ->
    [{'Origin-Host', Host},
     {'Origin-Realm', ?REALM},
     %% RFC 6733 §5.3.3: 0 in a CER means "ignore this field"; a test peer has no enterprise
     %% number (freeDiameter sends 0 too).
     {'Vendor-Id', 0},
     {'Product-Name', "OpenAAA Erlang PCEF"},
     {'Supported-Vendor-Id', [?TGPP]},
     {'Auth-Application-Id', [?GX]},
     {'Vendor-Specific-Application-Id', [[{'Vendor-Id', ?TGPP}, {'Auth-Application-Id', [?GX]}]]},
     {decode_format, map},
     {string_decode, false},
     {strict_arities, true},
     {strict_mbit, true},
     {application, [{alias, gx},
                    {dictionary, ?DICT},
                    {module, ?MODULE},
                    {answer_errors, callback},
                    {request_errors, callback}]}].

%% wait_up/0 waits for the capabilities exchange: the CEA's packet, or why there is none.
wait_up() ->
    receive
        #diameter_event{info = {up, _Ref, _Peer, _Config, #diameter_packet{} = Cea}} -> {up, Cea};
        #diameter_event{info = {closed, _Ref, Reason, _Config}} -> {down, Reason}
    after 10000 -> {down, timeout}
    end.

wait_down() ->
    receive
        #diameter_event{info = {down, _, _, _}} -> ok
    after 5000 -> ok
    end.

session(Host, IMSI, WaitRAR, Cea) ->
    CeaErrors = packet_errors("CEA", diameter_gen_base_rfc6733, Cea),
    SId = list_to_binary(diameter:session_id(binary_to_list(Host))),
    persistent_term:put(pcef_session, SId),
    Ccr = fun(Type, N, Avps) -> ccr(Host, SId, Type, N, Avps) end,
    I = Ccr(1, 0, initial(IMSI)),
    RAR = case WaitRAR of
              true -> receive {rar, R} -> R after 20000 -> #{rarReceived => false} end;
              false -> #{}
          end,
    U1 = Ccr(2, 1, update(200, 400)),
    U2 = Ccr(2, 2, update(100, 300)),
    T = Ccr(3, 3, (usage(2, 3))#{'Termination-Cause' => 1}), % DIAMETER_LOGOUT
    RarErrors = maps:get(errors, RAR, []),
    maps:merge(maps:remove(errors, RAR),
               #{ready => true,
                 sessionId => SId,
                 ceaVendorId => vendor_id(Cea),
                 answers => [I, U1, U2, T],
                 errors => CeaErrors ++ RarErrors}).

%% initial/1: the CCR-I of a PGW (TS 29.212 §4.5.1, §5.6.2) for an EPS bearer.
initial(IMSI) ->
    #{'Origin-State-Id' => [1],
      'Subscription-Id' => [#{'Subscription-Id-Type' => 0, 'Subscription-Id-Data' => <<"15550000001">>},
                            #{'Subscription-Id-Type' => 1, 'Subscription-Id-Data' => IMSI}],
      %% TS 29.212 §5.4.1: the features a PCEF supports, M cleared: of list 1 (Table 5.4.1.1)
      %% Rel8, Rel9, Rel10 and ADC (bits 0, 1, 3, 6), and a bit of list 2; the PCRF answers
      %% those it supports too.
      'Supported-Features' => [#{'Vendor-Id' => ?TGPP, 'Feature-List-ID' => 1, 'Feature-List' => 2#1001011},
                               #{'Vendor-Id' => ?TGPP, 'Feature-List-ID' => 2, 'Feature-List' => 1}],
      'Network-Request-Support' => [1],                        % NETWORK_REQUEST SUPPORTED
      'Framed-IP-Address' => [<<10, 0, 0, 9>>],
      'IP-CAN-Type' => [5],                                    % 3GPP-EPS
      'RAT-Type' => [1004],                                    % EUTRAN
      'User-Equipment-Info' => [#{'User-Equipment-Info-Type' => 0, % IMEISV
                                  'User-Equipment-Info-Value' => <<"3534900698733501">>}],
      'QoS-Information' => [#{'APN-Aggregate-Max-Bitrate-UL' => [50000000],
                              'APN-Aggregate-Max-Bitrate-DL' => [100000000]}],
      'Default-EPS-Bearer-QoS' => [#{'QoS-Class-Identifier' => [9],
                                     'Allocation-Retention-Priority' =>
                                         [#{'Priority-Level' => 8, 'Pre-emption-Capability' => [1],
                                            'Pre-emption-Vulnerability' => [0]}]}],
      'AN-GW-Address' => [{127, 0, 0, 2}],
      '3GPP-SGSN-MCC-MNC' => [<<"00101">>],
      '3GPP-User-Location-Info' => [<<130, 0, 241, 16, 0, 1, 0, 241, 16, 0, 0, 1, 1>>], % TAI+ECGI
      '3GPP-MS-TimeZone' => [<<64, 0>>],
      'Called-Station-Id' => [<<"internet.apn">>],
      'Bearer-Usage' => [0],                                   % GENERAL
      'Online' => [0],                                         % DISABLE_ONLINE
      'Offline' => [1],                                        % ENABLE_OFFLINE
      'Access-Network-Charging-Address' => [{127, 0, 0, 3}],
      'Access-Network-Charging-Identifier-Gx' => [#{'Access-Network-Charging-Identifier-Value' => <<0, 0, 0, 42>>}]}.

%% update/2: a CCR-U reporting In and Out octets on mk1.
update(In, Out) ->
    (usage(In, Out))#{'Event-Trigger' => [33]}.                % USAGE_REPORT

usage(In, Out) ->
    #{'Usage-Monitoring-Information' =>
          [#{'Monitoring-Key' => [<<"mk1">>],
             'Used-Service-Unit' => [#{'CC-Input-Octets' => [In], 'CC-Output-Octets' => [Out],
                                       'CC-Total-Octets' => [In + Out]}]}]}.

ccr(Host, SId, Type, N, Avps) ->
    Msg = maps:merge(Avps, #{'Session-Id' => SId, 'Auth-Application-Id' => ?GX,
                             'Origin-Host' => Host, 'Origin-Realm' => ?REALM,
                             'Destination-Realm' => ?REALM,
                             'CC-Request-Type' => Type, 'CC-Request-Number' => N}),
    Name = text("CCA ~b/~b", [Type, N]),
    case diameter:call(?SVC, gx, ['CCR' | Msg], [{timeout, 10000}]) of
        #diameter_packet{msg = ['CCA' | A]} = Pkt ->
            #{resultCode => first(maps:get('Result-Code', A, [0])),
              installed => rule_names(maps:get('Charging-Rule-Install', A, [])),
              removed => rule_names(maps:get('Charging-Rule-Remove', A, [])),
              granted => granted(maps:get('Usage-Monitoring-Information', A, [])),
              features => [[maps:get('Vendor-Id', F), maps:get('Feature-List-ID', F), maps:get('Feature-List', F)]
                           || F <- maps:get('Supported-Features', A, [])],
              errors => packet_errors(Name, ?DICT, Pkt)};
        Other ->
            #{resultCode => 0, errors => [text("~s: ~p", [Name, Other])]}
    end.

%% rule_names/1: the Charging-Rule-Names of Charging-Rule-Install or -Remove AVPs (not those
%% of rule bases or dynamic rules), as testdata/pcef.py reports them.
rule_names(Groups) ->
    [R || G <- Groups, R <- maps:get('Charging-Rule-Name', G, [])].

granted(Umis) ->
    lists:sum([first(maps:get('CC-Total-Octets', G, [0]))
               || U <- Umis, G <- maps:get('Granted-Service-Unit', U, [])]).

first([X | _]) -> X;
first(X) -> X.

%% packet_errors/3: what diameter found decoding Pkt, and the flags of its AVPs against Dict.
packet_errors(Name, Dict, #diameter_packet{errors = Errors, avps = Avps}) ->
    [text("~s: decode error ~s", [Name, decode_error(E)]) || E <- Errors]
        ++ [text("~s: ~s", [Name, F]) || F <- flag_errors(Dict, Avps)].

decode_error({Code, #diameter_avp{code = C, vendor_id = V, name = N}}) ->
    io_lib:format("~b on AVP ~p (code ~p, vendor ~p)", [Code, N, C, V]);
decode_error(E) ->
    io_lib:format("~p", [E]).

%% flag_errors/2: AVPs (a deep list: a Grouped AVP is [Group | Members]) whose M bit is not
%% what Dict says, or that Dict does not know. Failed-AVP's members are the peer's AVPs as
%% received: not checked.
flag_errors(Dict, Avps) ->
    lists:flatmap(fun(A) -> flag_error(Dict, A) end, flat(Avps)).

flat([]) -> [];
flat([[#diameter_avp{name = 'Failed-AVP'} = G | _] | T]) -> [G | flat(T)];
flat([[#diameter_avp{} = G | Members] | T]) -> [G | flat(Members)] ++ flat(T);
flat([#diameter_avp{} = A | T]) -> [A | flat(T)].

flag_error(_, #diameter_avp{name = undefined, code = C, vendor_id = V}) ->
    [io_lib:format("AVP code ~p vendor ~p is in no dictionary", [C, V])];
flag_error(Dict, #diameter_avp{name = N, is_mandatory = M}) ->
    {_, Flags, _} = Dict:avp_header(N),
    Want = Flags band 2#01000000 /= 0,
    case M == Want orelse lists:member(N, m_may()) of
        true -> [];
        false -> [io_lib:format("~s: M bit ~s, its table says it must~s be", [N, bit(M), bit_not(Want)])]
    end.

%% AVPs whose M bit is "may" in their table (TS 29.229 Table 6.3.1, RFC 4006 §8 table).
m_may() -> ['Supported-Features', 'User-Equipment-Info', 'User-Equipment-Info-Type', 'User-Equipment-Info-Value'].

bit(true) -> "set";
bit(false) -> "clear".
bit_not(true) -> "";
bit_not(false) -> " not".

vendor_id(#diameter_packet{avps = Avps}) ->
    case [V || #diameter_avp{code = 266, vendor_id = undefined, value = V} <- Avps] of
        [V] -> V;
        Vs -> Vs
    end.

text(Fmt, Args) -> iolist_to_binary(io_lib:format(Fmt, Args)).

%% diameter_app callbacks

peer_up(_Svc, _Peer, State) -> State.
peer_down(_Svc, _Peer, State) -> State.
pick_peer([Peer | _], _, _Svc, _State) -> {ok, Peer}.
prepare_request(Pkt, _Svc, _Peer) -> {send, Pkt}.
prepare_retransmit(Pkt, _Svc, _Peer) -> {send, Pkt}.
handle_answer(Pkt, _Request, _Svc, _Peer) -> Pkt.
handle_error(Reason, _Request, _Svc, _Peer) -> {error, Reason}.

%% The RAR: answered 2001 (TS 29.212 §4.5.2), its rules and errors reported to main/1.
handle_request(#diameter_packet{msg = ['RAR' | R]} = Pkt, _Svc, _Peer) ->
    pcef_main ! {rar, #{rarReceived => true,
                        rarInstalled => rule_names(maps:get('Charging-Rule-Install', R, [])),
                        errors => packet_errors("RAR", ?DICT, Pkt)}},
    {reply, ['RAA' | #{'Session-Id' => maps:get('Session-Id', R),
                       'Origin-Host' => persistent_term:get(pcef_host),
                       'Origin-Realm' => ?REALM,
                       'Result-Code' => [2001]}]};
handle_request(#diameter_packet{msg = Msg}, _Svc, _Peer) ->
    io:format(standard_error, "pcef: unexpected request ~p~n", [Msg]),
    {answer_message, 3001}.

%% json/1: the result as JSON (maps with atom keys, lists, binaries, integers, booleans).
json(true) -> "true";
json(false) -> "false";
json(N) when is_integer(N) -> integer_to_list(N);
json(B) when is_binary(B) -> [$", [esc(C) || <<C>> <= B], $"];
json(M) when is_map(M) ->
    [${, lists:join($,, [[json(atom_to_binary(K)), $:, json(V)] || {K, V} <- lists:sort(maps:to_list(M))]), $}];
json(L) when is_list(L) -> [$[, lists:join($,, [json(X) || X <- L]), $]];
json(X) -> json(text("~p", [X])).

esc($") -> "\\\"";
esc($\\) -> "\\\\";
esc(C) when C < 32 -> io_lib:format("\\u~4.16.0b", [C]);
esc(C) -> C.
