# Diameter/Gx: peers no one here wrote (python-diameter as the PCEF, freeDiameter as a base
# peer) for the tests of services/policing/internal/gx (docs/diameter-gx.md).
PROVISION += diameter-peers

##@ Diameter

.PHONY: diameter-peers
diameter-peers: ## Install python-diameter (venv, pinned) and freeDiameter (Debian) for the Gx tests (idempotent).
	hack/diameter-peers.sh install
