# LDAP subscriber source: OpenLDAP slapd + ldap-utils (Debian) for the integration tests.
# The tests start and stop their own slapd instances with hack/slapd.sh (by PID).
PROVISION += slapd

##@ LDAP

.PHONY: slapd
slapd: ## Install OpenLDAP slapd and ldap-utils (idempotent) for the LDAP tests.
	hack/slapd.sh install
