package serve

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openaiNodeVersion is the official OpenAI Node.js client the test uses.
const openaiNodeVersion = "7.59.0"

// TestOpenAINodeClient drives the server with the official `openai` npm
// package: models, a completion, a streamed chat completion with usage,
// and an error surfacing as the client's APIError with status 400. It
// needs node and npm; the package is installed into
// $SERVESIM_NODE_MODULES (or the user cache) when missing. It is skipped
// with a message under -short, without node or npm, or when the package
// cannot be installed (no registry access).
func TestOpenAINodeClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the OpenAI Node.js client test is skipped")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the OpenAI Node.js client test is skipped")
	}
	dir := os.Getenv("SERVESIM_NODE_MODULES")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Skipf("no cache directory for the openai package (%v): skipped", err)
		}
		dir = filepath.Join(cache, "servesim-openai-"+openaiNodeVersion)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Skip("npm is not installed: the OpenAI Node.js client test is skipped")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", dir, "openai@"+openaiNodeVersion).CombinedOutput()
		if err != nil {
			t.Skipf("npm could not install openai@%s (%v: %s): skipped", openaiNodeVersion, err, strings.TrimSpace(string(out)))
		}
	}
	_, base := start(t, build(t, smallScenario), Options{Config: Config{Speed: 4}})
	script, err := filepath.Abs("testdata/openai_client.cjs")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, base+"/v1")
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got struct {
		Models     []string
		Completion struct {
			Text, Finish string
			Usage        usage
		}
		Chat struct {
			Text   string
			Chunks int
			Finish string
			Usage  usage
		}
		Error struct {
			Status        int
			Message, Type string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if len(got.Models) != 1 || got.Models[0] != "meta-llama/Llama-3.1-8B" {
		t.Errorf("models: %v", got.Models)
	}
	if c := got.Completion; c.Finish != "length" || len(strings.Fields(c.Text)) != 7 || c.Usage != (usage{PromptTokens: 6, CompletionTokens: 7, TotalTokens: 13}) {
		t.Errorf("completion: %+v", c)
	}
	// "Hi!": 4 + 1 + 4 = 9 prompt tokens.
	if c := got.Chat; c.Finish != "length" || c.Chunks != 5 || c.Usage != (usage{PromptTokens: 9, CompletionTokens: 5, TotalTokens: 14}) {
		t.Errorf("streamed chat: %+v", c)
	}
	if e := got.Error; e.Status != 400 || !strings.Contains(e.Message, "max_tokens must be at least 1") {
		t.Errorf("error: %+v", e)
	}
}
