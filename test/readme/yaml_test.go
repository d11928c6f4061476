package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	sbwire "github.com/switchboard-ai/switchboard/wire"
)

// fragmentMark marks a ```yaml block of the README or of a page under docs/ that is deliberately not a whole
// configuration file (a model without the providers it names): its first line is a YAML comment beginning
// "# fragment", such as "# fragment: the model only, without the provider it names (fal)". Such a block is parsed
// as YAML only, and must still be valid YAML; every other block must load as a configuration file.
const fragmentMark = "# fragment"

// yamlBlock is the text between the opening line "```yaml" and the closing "```" of a fenced block.
var yamlBlock = regexp.MustCompile("(?ms)^```yaml[ \t]*\n(.*?)^```")

// TestYAMLExamples: every ```yaml block of the README and of the pages under docs/ is a configuration file that
// the gateway loads as `switchboard config check` does (wire.LoadConfig: parse, ${VAR} expansion, unknown keys,
// validation), or, when its first line says it is a fragment, at least valid YAML. Each ${VAR} the block names reads
// as a placeholder; no other environment variable is set, so the host's environment plays no part.
func TestYAMLExamples(t *testing.T) {
	t.Parallel()
	root := Root(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	blocks := 0
	for _, path := range docs {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		rel, _ := filepath.Rel(root, path)
		for _, m := range yamlBlock.FindAllStringSubmatchIndex(text, -1) {
			blocks++
			line := strings.Count(text[:m[0]], "\n") + 1
			block := text[m[2]:m[3]]
			name := rel + ":" + strconv.Itoa(line)
			t.Run(name, func(t *testing.T) {
				if _, err := loadBlock(t, block); err != nil {
					t.Errorf("%s: the ```yaml block that opens here does not load (its lines count from the one after "+
						"the fence; mark a block that is not a whole file with a first line %q): %v", name, fragmentMark+": ...", err)
				}
			})
		}
	}
	if blocks == 0 {
		t.Fatal("no ```yaml block in the README or docs/: has the fence changed?")
	}
}

// TestYAMLExamplesCatch: loadBlock refuses what TestYAMLExamples is there to catch (an unquoted ${VAR} in a flow
// mapping, an unknown key, an invalid configuration, a fragment that is not YAML), and a quoted ${VAR} is expanded.
func TestYAMLExamplesCatch(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, block string
		ok          bool
	}{
		{"quoted variable", "providers:\n  - {slug: openai, kind: openai, base_url: https://api.openai.com/v1, api_key: \"${OPENAI_API_KEY}\"}\n", true},
		{"bare variable in a flow mapping", "providers:\n  - {slug: openai, kind: openai, base_url: https://api.openai.com/v1, api_key: ${OPENAI_API_KEY}}\n", false},
		{"unknown key", "providers:\n  - {slug: openai, kind: openai, base_url: https://api.openai.com/v1, api_kye: x}\n", false},
		{"a model with no provider", "models:\n  - {id: m, modality: chat, endpoints: [{provider: nope, upstream_model: m}]}\n", false},
		{"a fragment", fragmentMark + ": the provider is elsewhere\nmodels:\n  - {id: m, modality: chat, endpoints: [{provider: nope, upstream_model: m}]}\n", true},
		{"a fragment that is not YAML", fragmentMark + "\nproviders:\n  - {api_key: ${X}}\n", false},
	} {
		if _, err := loadBlock(t, tt.block); (err == nil) != tt.ok {
			t.Errorf("%s: loadBlock = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
	// A quoted ${VAR} is still expanded: the quotes keep the flow mapping valid YAML and the value a string.
	cfg, err := loadBlock(t, "providers:\n  - {slug: openai, kind: openai, base_url: https://api.openai.com/v1, api_key: \"${OPENAI_API_KEY}\"}\n")
	if err != nil {
		t.Fatal(err)
	}
	if keys := cfg.Providers[0].Keys; len(keys) != 1 || keys[0].Key != "placeholder-openai_api_key" {
		t.Errorf("api_key \"${OPENAI_API_KEY}\" loads as %+v, want the variable's value", keys)
	}
}

// loadBlock loads block as a configuration file, or only parses it when it is marked as a fragment.
func loadBlock(t *testing.T, block string) (sbwire.Config, error) {
	if strings.HasPrefix(block, fragmentMark) {
		var v any
		return sbwire.Config{}, yaml.Unmarshal([]byte(block), &v)
	}
	file := filepath.Join(t.TempDir(), "switchboard.yaml")
	if err := os.WriteFile(file, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, m := range envRef.FindAllStringSubmatch(block, -1) {
		named[m[1]] = true
	}
	return sbwire.LoadConfig(file, func(k string) string {
		if named[k] {
			return "placeholder-" + strings.ToLower(k)
		}
		return ""
	})
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
