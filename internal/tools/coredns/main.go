// Command coredns is CoreDNS's own main with only the plugins of the local cluster's DNS
// (hack/cluster.sh builds it into the cluster's CoreDNS image): no forward, so nothing leaves
// the box and a name outside cluster.local gets SERVFAIL instead of a trip to the host's
// resolver.
//
// Built in this module rather than in a wrapper of its own, like internal/tools/kubectl: the
// graph helm and the operator compiled already holds client-go, the API types, grpc and the
// Prometheus client that CoreDNS's kubernetes plugin and server need, so a cold machine
// compiles only CoreDNS's own packages (issue 12's budget).
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() { coremain.Run() }
