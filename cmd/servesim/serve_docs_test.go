package main

import (
	"os"
	"strings"
	"testing"
)

// TestServeManifestInDocs: the Kubernetes manifest shown in docs/serve.md
// is examples/k8s/serve.yaml without its comment header.
func TestServeManifestInDocs(t *testing.T) {
	file, err := os.ReadFile("../../examples/k8s/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var body []string
	for _, l := range strings.Split(string(file), "\n") {
		if len(body) == 0 && strings.HasPrefix(l, "#") {
			continue
		}
		body = append(body, l)
	}
	doc, err := os.ReadFile("../../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+strings.Join(body, "\n")+"```") {
		t.Fatal("docs/serve.md does not show examples/k8s/serve.yaml (without its comments) in a yaml block")
	}
}
