package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/util/lua"
	"github.com/argoproj/argo-cd/v3/util/settings"
	healthutil "github.com/argoproj/gitops-engine/pkg/health"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"
)

// The health an application controller gives an object, offline: what `argocd admin settings
// resource-overrides health OBJECT --argocd-cm-path CM` prints (STATUS:, MESSAGE:), through the
// same calls — argocd-cm read by Argo CD's settings manager, the object judged by gitops-engine's
// health code with Argo CD's Lua overrides — but in the components' binary. The CLI's admin
// package links nearly all of Argo CD (the API server, ApplicationSets, notifications): make test
// judges our fixtures here instead of building it (2-3 min of a cold run's two cores).
func init() {
	roles["argocd-resource-health"] = role{healthCommand, true}
}

func healthCommand() *cobra.Command {
	var cmPath string
	c := &cobra.Command{
		Use:   "argocd-resource-health OBJECT_YAML --argocd-cm-path ARGOCD_CM_YAML",
		Short: "Assess an object's health with the resource customizations of an argocd-cm",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if cmPath == "" {
				return errors.New("--argocd-cm-path is required")
			}
			var obj unstructured.Unstructured
			if err := readYAML(args[0], &obj); err != nil {
				return err
			}
			var cm corev1.ConfigMap
			if err := readYAML(cmPath, &cm); err != nil {
				return err
			}
			// The settings manager reads argocd-cm and argocd-secret, labelled as Argo CD's,
			// from its namespace, as the CLI's offline mode gives them.
			cm.Name, cm.Namespace = common.ArgoCDConfigMapName, "default"
			if cm.Labels == nil {
				cm.Labels = map[string]string{}
			}
			cm.Labels["app.kubernetes.io/part-of"] = "argocd"
			secret := &corev1.Secret{Data: map[string][]byte{"server.secretkey": []byte("offline")}}
			secret.Name, secret.Namespace = common.ArgoCDSecretName, "default"
			secret.Labels = map[string]string{"app.kubernetes.io/part-of": "argocd"}
			mgr := settings.NewSettingsManager(c.Context(), fake.NewClientset(&cm, secret), "default")
			if err := mgr.ResyncInformers(); err != nil {
				return err
			}
			overrides, err := mgr.GetResourceOverrides()
			if err != nil {
				return err
			}
			h, err := healthutil.GetResourceHealth(&obj, lua.ResourceHealthOverrides(overrides))
			if err != nil {
				return err
			}
			if h == nil {
				gvk := obj.GroupVersionKind()
				fmt.Printf("Health script is not configured for '%s/%s'\n", gvk.Group, gvk.Kind)
				return nil
			}
			fmt.Printf("STATUS: %s\nMESSAGE: %s\n", h.Status, h.Message)
			return nil
		},
	}
	c.Flags().StringVar(&cmPath, "argocd-cm-path", "", "argocd-cm ConfigMap (YAML) whose resource customizations judge the object")
	c.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the Argo CD version this binary was built from",
		Args:  cobra.NoArgs,
		Run:   func(*cobra.Command, []string) { fmt.Printf("argocd: %s\n", common.GetVersion().Version) },
	})
	return c
}

func readYAML(path string, into any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
