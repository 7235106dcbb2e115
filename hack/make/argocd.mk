# Argo CD v3.2.11 (issue 36), the real one: one static multi-call binary built from the Go module
# proxy by hack/argocd.sh (module hack/argocd), cached under $(CACHE)/argocd with a stamp of its
# version, the Go version, the flags and hack/argocd's files. Cold: about 11 min of compiling on
# 2 cores; warm: a second.

##@ Argo CD
.PHONY: argocd
argocd: ## Build Argo CD v3.2.11 into $(CACHE)/argocd/bin/argocd (cached; hack/argocd/go.mod).
	GO=$(GO) hack/argocd.sh build
