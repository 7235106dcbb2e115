package main

import "sigs.k8s.io/yaml"

func yamlOf(v any) (string, error) {
	b, err := yaml.Marshal(v)
	return string(b), err
}
