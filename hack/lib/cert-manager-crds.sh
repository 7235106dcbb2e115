# shellcheck shell=bash
# cert-manager's CRDs from its module zip (deploy/crds), shared by hack/envtest.sh and
# hack/addons.sh. The files are Helm templates: the template-only lines are dropped and the
# labels get plain values.
#
#   cert_manager_crd MODULE_DIR NAME OUTDIR   deploy/crds/crd-NAME.yaml -> OUTDIR/cert-manager.io_NAME.yaml
cert_manager_crd() {
	local out="$3/cert-manager.io_$2.yaml"
	sed -e '/{{-/d' \
		-e "s/'{{ template \"cert-manager.name\" . }}'/cert-manager/" \
		-e "s/'{{ .Release.Name }}'/cert-manager/" \
		"$1/deploy/crds/crd-$2.yaml" >"$out"
	if grep -q '{{' "$out"; then
		echo "cert-manager CRD: unexpected Helm template left in crd-$2.yaml" >&2
		return 1
	fi
}
