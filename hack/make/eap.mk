# EAP: eapol_test (Debian eapoltest) as the supplicant of the EAP tests in
# services/policing/internal/app (docs/eap.md).
PROVISION += eapoltest

##@ EAP

.PHONY: eapoltest
eapoltest: ## Install eapol_test (Debian eapoltest, wpa_supplicant 2.10) for the EAP tests (idempotent).
	hack/eapol.sh install
