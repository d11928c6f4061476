package readme

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestLinks: every relative link of the README, CONTRIBUTING.md, CHANGELOG.md, the pages under docs/ and the
// benchmark history names a file that exists, and its #fragment, in a Markdown file, a heading there.
func TestLinks(t *testing.T) {
	t.Parallel()
	root := Root(t)
	docs := []string{"README.md", "CONTRIBUTING.md", "CHANGELOG.md", "test/benche2e/HISTORY.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			docs = append(docs, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range relativeLinks(string(raw)) {
			if err := resolve(root, doc, target); err != nil {
				t.Errorf("%s: link %s: %v", doc, target, err)
			}
		}
	}
}

func TestSlugs(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ heading, want string }{
		{"Running several replicas", "running-several-replicas"},
		{"When the gateway answers 503", "when-the-gateway-answers-503"},
		{"2026-11-24, 13:40-14:15 UTC", "2026-11-24-1340-1415-utc"},
		{"What a model takes: `models[].video`", "what-a-model-takes-modelsvideo"},
		{"Callbacks (`callback_url`)", "callbacks-callback_url"},
	} {
		if got := slug(tt.heading); got != tt.want {
			t.Errorf("slug(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}

var (
	link    = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	fence   = regexp.MustCompile("(?ms)^```.*?^```")
	heading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
)

// relativeLinks are the Markdown links of text outside code blocks that point into the repository.
func relativeLinks(text string) []string {
	var out []string
	for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		if !strings.Contains(m[1], "://") && !strings.HasPrefix(m[1], "mailto:") {
			out = append(out, m[1])
		}
	}
	return out
}

// resolve checks target, a link in doc, against the files under root.
func resolve(root, doc, target string) error {
	file, fragment, _ := strings.Cut(target, "#")
	path := filepath.Join(root, doc)
	if file != "" {
		path = filepath.Join(filepath.Dir(path), file)
	}
	if rel, err := filepath.Rel(root, path); err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("outside the repository")
	}
	if _, err := os.Stat(path); err != nil {
		return err
	}
	if fragment == "" || !strings.HasSuffix(path, ".md") {
		return nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(raw), ""), -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			seen[s] = n + 1
			s = fmt.Sprintf("%s-%d", s, n)
		} else {
			seen[s] = 1
		}
		if s == fragment {
			return nil
		}
	}
	return fmt.Errorf("no heading #%s there", fragment)
}

// slug is a heading's anchor as GitHub makes it: lower case, spaces as hyphens, other punctuation dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
