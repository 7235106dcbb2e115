# shellcheck shell=bash
# admin_token DIR: write a random admin API token to DIR/admin-token (policing's
# admin.tokenFile) and the matching header to DIR/admin-header, both mode 0600, so that
# `curl -H @DIR/admin-header` calls the API without the token ever being on a command line
# (docs/security.md).
admin_token() {
	(
		umask 077
		head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1/admin-token"
		printf 'Authorization: Bearer %s\n' "$(cat "$1/admin-token")" >"$1/admin-header"
	)
}
