package lint

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxTrackedSize is the largest file the repository tracks outside a
// testdata/ directory. Anything bigger is almost always a build output or a
// raw dump that belongs in a release asset, not in every clone.
const maxTrackedSize = 1 << 20

// executableMagic are the first bytes of the executable and object formats
// a Go build writes: ELF (Linux, BSD), Mach-O (32/64-bit, both byte orders,
// and universal binaries) and PE (Windows; "MZ" is the DOS stub).
var executableMagic = [][]byte{
	{0x7f, 'E', 'L', 'F'},
	{0xfe, 0xed, 0xfa, 0xce}, {0xce, 0xfa, 0xed, 0xfe},
	{0xfe, 0xed, 0xfa, 0xcf}, {0xcf, 0xfa, 0xed, 0xfe},
	{0xca, 0xfe, 0xba, 0xbe},
}

// isPE reports whether head starts a Windows executable: "MZ" and binary
// bytes after it (a NUL within the header), so that a text file that
// happens to start with "MZ" is not taken for one.
func isPE(head []byte) bool {
	return bytes.HasPrefix(head, []byte("MZ")) && bytes.IndexByte(head, 0) >= 0
}

// buildOutputProblem says why the tracked file name (slash-separated,
// relative to the root) with the given first bytes and size should not be
// tracked, or returns "" when it may be.
func buildOutputProblem(name string, head []byte, size int64) string {
	switch path.Ext(name) {
	case ".test":
		return "a compiled test binary (*.test)"
	case ".prof":
		return "a profile (*.prof)"
	}
	for _, m := range executableMagic {
		if bytes.HasPrefix(head, m) {
			return "an executable or object file (magic bytes)"
		}
	}
	if isPE(head) {
		return "an executable or object file (magic bytes)"
	}
	if size > maxTrackedSize && !inTestdata(name) {
		return "over 1 MiB outside testdata/"
	}
	return ""
}

func inTestdata(name string) bool {
	return strings.HasPrefix(name, "testdata/") || strings.Contains(name, "/testdata/")
}

// trackedBuildOutputs lists the files git tracks under root that
// buildOutputProblem rejects, as "name: reason". ok is false when root is
// not a git work tree (a source archive, say) or git is not installed.
func trackedBuildOutputs(t *testing.T, root string) (problems []string, ok bool) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, false
	}
	inside, err := exec.Command("git", "-C", root, "rev-parse", "--is-inside-work-tree").Output()
	if err != nil || strings.TrimSpace(string(inside)) != "true" {
		return nil, false
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	require.NoError(t, err)
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" {
			continue
		}
		f, err := os.Open(filepath.Join(root, filepath.FromSlash(name)))
		if os.IsNotExist(err) {
			continue // deleted in the work tree but not yet in the index
		}
		require.NoError(t, err)
		st, err := f.Stat()
		require.NoError(t, err)
		head := make([]byte, 64)
		n, _ := f.Read(head)
		require.NoError(t, f.Close())
		if st.IsDir() { // a submodule
			continue
		}
		if why := buildOutputProblem(name, head[:n], st.Size()); why != "" {
			problems = append(problems, name+": "+why)
		}
	}
	return problems, true
}

// TestLint_NoTrackedBuildOutputs: git tracks sources, not what a build
// makes. .gitignore keeps new ones out, but a `git add -f` or a file added
// before the rule slips past it; this test does not.
func TestLint_NoTrackedBuildOutputs(t *testing.T) {
	problems, ok := trackedBuildOutputs(t, repoRoot(t))
	if !ok {
		t.Skip("not a git work tree, or git is not installed")
	}
	require.Empty(t, problems, "tracked build outputs: remove them with git rm --cached")
}

// TestLint_TrackedBuildOutputsFinds plants each kind of build output in a
// fresh repository and checks that the scan reports exactly those.
func TestLint_TrackedBuildOutputsFinds(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	git("init", "-q")
	big := bytes.Repeat([]byte("x"), maxTrackedSize+1)
	files := map[string][]byte{
		"main.go":             []byte("package main\n"),
		"pkg/pkg.test":        []byte("anything"),
		"cpu.prof":            []byte("anything"),
		"tool/strata":         append([]byte{0x7f, 'E', 'L', 'F'}, 2, 1, 1),
		"tool/strata-darwin":  {0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1},
		"tool/strata.exe":     []byte("MZ\x90\x00"),
		"docs/dump.tsv":       big,
		"db/testdata/big.sst": big, // large fixtures are fine under testdata/
		"README.md":           []byte("MZ is not at the start\n"),
	}
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
	}
	git("add", "-f", ".")

	problems, ok := trackedBuildOutputs(t, root)
	require.True(t, ok)
	require.ElementsMatch(t, []string{
		"cpu.prof: a profile (*.prof)",
		"docs/dump.tsv: over 1 MiB outside testdata/",
		"pkg/pkg.test: a compiled test binary (*.test)",
		"tool/strata: an executable or object file (magic bytes)",
		"tool/strata-darwin: an executable or object file (magic bytes)",
		"tool/strata.exe: an executable or object file (magic bytes)",
	}, problems)
}
