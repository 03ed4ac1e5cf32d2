package lint

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestMarkdownLinks fails on a link in the repository's Markdown files that
// leaves the repository (../shared/...) or names a file that does not exist:
// the repository explains itself, and what it points to is in it.
func TestMarkdownLinks(t *testing.T) {
	root := moduleRoot(t)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			checkLink(t, root, rel, m[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkLink reports a relative link target of file rel that is outside the
// repository or missing. URLs and in-page anchors are not checked.
func checkLink(t *testing.T, root, rel, target string) {
	t.Helper()
	if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
		return
	}
	target, _, _ = strings.Cut(target, "#")
	if target == "" {
		return
	}
	p := filepath.Join(root, filepath.Dir(rel), filepath.FromSlash(target))
	if r, err := filepath.Rel(root, p); err != nil || strings.HasPrefix(r, "..") {
		t.Errorf("%s links to %s, outside the repository", rel, target)
		return
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("%s links to %s, which does not exist", rel, target)
	}
}
