// Package prometheus embeds the alerts of OpenAAA (prometheusrule.yaml), so that Go code (the
// operator's spec.monitoring.prometheusRule, tests) ships exactly the rules of this file. The
// openaaa-operator chart ships a copy (charts/openaaa-operator/files/prometheus, kept in step
// by test/charts).
package prometheus

import (
	"bytes"
	_ "embed"
)

//go:embed prometheusrule.yaml
var ruleFile []byte

// The file's selectors carry these matchers where the operator narrows a rule to one
// AAACluster: every policing selector has PolicingScope (true of every series the operator's
// ServiceMonitor scrapes), every kube-state-metrics AAACluster selector has ClusterScope.
// test/monitoring checks that no selector of a ClusterGroups rule lacks them.
const (
	PolicingScope = `aaa_openaaa_io_datacenter!=""`
	ClusterScope  = `name!=""`
)

// ClusterGroups are the rule groups about AAAClusters, which the operator ships per AAACluster
// (narrowed to it); the other groups are about the operator's installation and only the chart
// ships them.
var ClusterGroups = []string{"openaaa.policing", "openaaa.aaacluster"}

// RuleFile returns prometheusrule.yaml (a PrometheusRule).
func RuleFile() []byte { return bytes.Clone(ruleFile) }
