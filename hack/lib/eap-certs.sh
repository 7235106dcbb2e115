# shellcheck shell=bash
# eap_certs DIR SERVER-NAME CLIENT-CN KEY-OPTION...: with openssl, a CA (DIR/ca.pem, ca.key), the
# EAP server's certificate for SERVER-NAME (server.pem, server.key; serverAuth) and one client
# certificate of subject CN=CLIENT-CN (client.pem, client.key; clientAuth), valid two days. The
# key options are openssl req's: -newkey rsa:2048, or -newkey ec -pkeyopt
# ec_paramgen_curve:prime256v1. Used by hack/demo.sh and hack/bench-eap.sh.
eap_certs() {
	local dir=$1 server=$2 client=$3
	shift 3
	mkdir -p "$dir"
	openssl req -x509 "$@" -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 -subj "/CN=OpenAAA test CA" \
		-addext basicConstraints=critical,CA:true -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
	eap_certs_issue "$dir" server "$server" serverAuth "$@"
	eap_certs_issue "$dir" client "$client" clientAuth "$@"
}

# eap_certs_issue DIR NAME CN EXTENDED-KEY-USAGE KEY-OPTION...: DIR/NAME.pem and NAME.key, signed
# by DIR's CA.
eap_certs_issue() {
	local dir=$1 name=$2 cn=$3 eku=$4
	shift 4
	openssl req "$@" -nodes -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "/CN=$cn" 2>/dev/null
	openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -set_serial "$RANDOM$RANDOM" -days 2 \
		-out "$dir/$name.pem" 2>/dev/null \
		-extfile <(printf 'subjectAltName=DNS:%s\nextendedKeyUsage=%s\nkeyUsage=critical,digitalSignature,keyEncipherment\n' "$cn" "$eku")
	rm "$dir/$name.csr"
}
