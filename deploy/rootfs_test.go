//go:build linux

package deploy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The image's size bound (deploy/README.md).
const maxImageBytes = 600 << 20

// sizeToleranceMiB is how far a measured image may be from the size
// README.md states before TestImageRootfs asks for the new figure:
// Debian's updates move it by a few MiB.
const sizeToleranceMiB = 6

// imageSizeRow is a row of README.md's table of targets: its name and size.
var imageSizeRow = regexp.MustCompile("(?m)^\\| `(\\w+)`[^|]*\\| (\\d+) MiB \\|")

// documentedSizes reads the image sizes README.md states, in MiB by target.
func documentedSizes(t *testing.T) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for _, m := range imageSizeRow.FindAllStringSubmatch(string(b), -1) {
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sizes[m[1]] = n
	}
	return sizes
}

// TestReadmeStatesImageSizes: README.md states a size for each of the
// Dockerfile's targets, which TestImageRootfs checks against the build.
func TestReadmeStatesImageSizes(t *testing.T) {
	sizes := documentedSizes(t)
	for _, name := range readImage(t).names {
		if sizes[name] == 0 {
			t.Errorf("README.md's table of targets has no size for %s (got %v)", name, sizes)
		}
	}
}

// rootfsCache keeps built trees between runs, keyed by what they are built
// from; one a week old is built again, for Debian's updates.
const (
	rootfsCache    = "/var/cache/runblock-rootfs"
	rootfsCacheAge = 7 * 24 * time.Hour
	debianMirror   = "http://deb.debian.org/debian"
)

// slimConfig is what Debian's official -slim images (debuerreotype) add to
// a minbase tree: no documentation, manuals or translations, and apt
// that keeps neither downloaded packages nor its binary caches.
var slimConfig = map[string]string{
	"etc/dpkg/dpkg.cfg.d/docker": `path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
`,
	"etc/apt/apt.conf.d/docker-clean": `DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
`,
	"etc/apt/apt.conf.d/docker-no-languages":        "Acquire::Languages \"none\";\n",
	"etc/apt/apt.conf.d/docker-gzip-indexes":        "Acquire::GzipIndexes \"true\";\n",
	"etc/apt/apt.conf.d/docker-autoremove-suggests": "Apt::AutoRemove::SuggestsImportant \"false\";\n",
}

// slimRemove are the files of a minbase tree that slimConfig would not
// have unpacked.
var slimRemove = []string{"usr/share/groff", "usr/share/info", "usr/share/linda", "usr/share/lintian/overrides", "usr/share/locale", "usr/share/man"}

// image is the final stage of the Dockerfile, read for building it.
type image struct {
	suite string          // Debian release of FROM debian:<suite>-slim
	runs  [][]instruction // each stage's RUN and USER lines, base first
	names []string        // the stages' names, as runs
	env   []string        // ENV, as KEY=value
	user  string          // the last USER
	dir   string          // the last WORKDIR
	copy  string          // where COPY --from=build puts runblock
}

func readImage(t *testing.T) image {
	t.Helper()
	d := readDockerfile(t)
	var img image
	for i := len(d.stages) - 1; i >= 0; i = d.stage(strings.Fields(d.stages[i][0].args)[0]) {
		img.runs = append([][]instruction{nil}, img.runs...)
		img.names = append([]string{d.names[i]}, img.names...)
		for _, in := range d.stages[i][1:] {
			if in.cmd == "RUN" || in.cmd == "USER" {
				img.runs[0] = append(img.runs[0], in)
			}
		}
	}
	chain := d.chain(len(d.stages) - 1)
	m := regexp.MustCompile(`^debian:([a-z]+)-slim$`).FindStringSubmatch(strings.Fields(chain[0].args)[0])
	if m == nil {
		t.Fatalf("the final image is FROM %s, not debian:<release>-slim: this test builds only those", chain[0].args)
	}
	img.suite = m[1]
	for _, in := range chain {
		switch in.cmd {
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				if !strings.Contains(kv, "=") {
					t.Fatalf("line %d: ENV %q is not KEY=value", in.line, kv)
				}
				img.env = append(img.env, kv)
			}
		case "USER":
			img.user = in.args
		case "WORKDIR":
			img.dir = in.args
		case "COPY":
			if f := strings.Fields(in.args); len(f) == 3 && f[0] == "--from=build" && filepath.Base(f[1]) == "runblock" {
				img.copy = f[2]
			}
		}
	}
	if img.copy == "" || img.user == "" || img.dir == "" {
		t.Fatalf("the final image has no COPY of runblock, USER or WORKDIR: %+v", img)
	}
	return img
}

// baseKey names the slim minbase tree of img's release; key the tree
// built from it by img's RUN lines.
func (img image) baseKey() string {
	h := sha256.New()
	fmt.Fprintln(h, img.suite, debianMirror)
	for _, name := range slices.Sorted(maps.Keys(slimConfig)) {
		fmt.Fprintln(h, name, slimConfig[name])
	}
	return "base-" + hex.EncodeToString(h.Sum(nil))[:16]
}

func (img image) key() string {
	h := sha256.New()
	fmt.Fprintln(h, img.baseKey())
	for _, stage := range img.runs {
		for _, in := range stage {
			fmt.Fprintln(h, in.cmd, in.args)
		}
	}
	return "image-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// cached reports whether the cache holds a fresh name.
func cached(name string) bool {
	fi, err := os.Stat(filepath.Join(rootfsCache, name))
	return err == nil && time.Since(fi.ModTime()) < rootfsCacheAge
}

// store writes tree to the cache as name, atomically.
func store(t *testing.T, tree, name string) {
	t.Helper()
	if err := os.MkdirAll(rootfsCache, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(rootfsCache, name)
	command(t, "tar", "-C", tree, "--numeric-owner", "-cf", path+".tmp", ".")
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// TestImageRootfs builds the image's final stage as a root filesystem from
// Debian's packages, as docker build would: a minbase tree made slim as
// Debian's -slim images are, then the Dockerfile's own RUN lines in it,
// then runblock where COPY puts it. It enters the tree with new mount,
// PID, network, UTS and IPC namespaces and pivot_root (a chroot would keep
// the sandbox from creating user namespaces) and, as the image's user,
// runs doctor, a hello world and the sandbox manual's pandas+matplotlib example.
func TestImageRootfs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Debian root filesystem: not with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("debootstrap, chroot and pivot_root need root")
	}
	for _, tool := range []string{"debootstrap", "unshare", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on PATH (apt-get install debootstrap): %v", tool, err)
		}
	}
	img := readImage(t)
	start := time.Now()
	tree := filepath.Join(t.TempDir(), "rootfs")
	sizes := buildTree(t, img, tree)
	t.Logf("tree ready in %v", time.Since(start).Round(time.Second))

	bin := filepath.Join(tree, img.copy)
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	build.Dir, build.Env = "..", append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedSizes(t)
	for i, name := range img.names {
		mib := (sizes[i] + fi.Size()) >> 20
		t.Logf("image %s (--target %s): %d MiB", name, name, mib)
		if doc := documented[name]; mib < doc-sizeToleranceMiB || mib > doc+sizeToleranceMiB {
			t.Errorf("the %s image is %d MiB; README.md says %d MiB: write the measured size there", name, mib, doc)
		}
	}
	if total := sizes[len(sizes)-1] + fi.Size(); total > maxImageBytes {
		t.Errorf("the image is %d MiB, over %d MiB", total>>20, maxImageBytes>>20)
	}

	t.Run("no compiler", func(t *testing.T) {
		for _, pattern := range []string{"usr/bin/*gcc*", "usr/bin/*g++*", "usr/bin/cc", "usr/bin/c++", "usr/bin/cpp*", "usr/bin/*-ld", "usr/include/boost"} {
			if m, _ := filepath.Glob(filepath.Join(tree, pattern)); len(m) > 0 {
				t.Errorf("the image has %v", m)
			}
		}
	})

	user := imageUser(img)
	run := func(t *testing.T, stdin string, args ...string) string {
		t.Helper()
		out, err := enter(tree, img, user, stdin, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}

	t.Run("user", func(t *testing.T) {
		uid, _, _ := strings.Cut(img.user, ":")
		out := run(t, "", "id")
		if want := fmt.Sprintf("uid=%[1]s(runblock) gid=%[1]s(runblock) groups=%[1]s(runblock)", uid); strings.TrimSpace(out) != want {
			t.Errorf("id: %q, want %q: the user needs a group of its own id, with a name", strings.TrimSpace(out), want)
		}
	})

	t.Run("doctor", func(t *testing.T) {
		begin := time.Now()
		out := run(t, "", "runblock", "doctor")
		t.Logf("runblock doctor (%v):\n%s", time.Since(begin).Round(time.Millisecond), out)
		tier := regexp.MustCompile(`(?m)^tier:\s+(\S+)`).FindStringSubmatch(out)
		if tier == nil || (tier[1] != "full" && tier[1] != "reduced") {
			t.Fatalf("no isolation tier: %v", tier)
		}
		// As the image's non-root user every layer holds but a separate
		// uid for the snippet (deploy/README.md).
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) >= 3 && strings.HasPrefix(line, "  ") && (f[1] == "on," || f[1] == "off") && f[0] != "unprivileged-uid" && f[2] != "verified" {
				t.Errorf("layer not verified: %s", line)
			}
		}
		for _, pkg := range []string{"numpy", "pandas", "matplotlib", "scipy", "sympy", "networkx"} {
			if !regexp.MustCompile(`(?m)^\s+` + pkg + `\s+\d`).MatchString(out) {
				t.Errorf("doctor does not list %s", pkg)
			}
		}
	})

	// Compose's executor: root in the image, with exactly the capabilities
	// compose.yaml gives it.
	t.Run("executor capabilities", func(t *testing.T) {
		p, err := loadCompose(t, nil, "", "scaled")
		if err != nil {
			t.Fatal(err)
		}
		caps := service(t, p, "executor").CapAdd
		for _, tc := range []struct {
			caps []string
			want string
		}{
			{caps, "(?m)^tier:\\s+full$"},
			// What compose.yaml gave before: the error names what is missing.
			{[]string{"SETUID", "SETGID"}, "without CAP_SETFCAP .*CAP_CHOWN .*CAP_DAC_OVERRIDE "},
		} {
			root := "--reuid=0 --regid=0 --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all"
			for _, c := range tc.caps {
				root += ",+" + strings.ToLower(c)
			}
			out, _ := enter(tree, img, root, "", "runblock", "doctor")
			if !regexp.MustCompile(tc.want).MatchString(out) {
				t.Errorf("doctor as root with %v does not match %q:\n%s", tc.caps, tc.want, out)
			}
		}
	})

	t.Run("hello world", func(t *testing.T) {
		out := run(t, "print('hello, world')\n", "runblock", "exec", "-")
		if !strings.Contains(out, "hello, world") {
			t.Errorf("exec: %q", out)
		}
	})

	t.Run("the manual's example", func(t *testing.T) {
		csv, code := readmeExample(t)
		home := filepath.Join(tree, img.dir)
		for name, content := range map[string]string{"visits.csv": csv, "example.py": code} {
			if err := os.WriteFile(filepath.Join(home, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		begin := time.Now()
		out := run(t, "", "runblock", "exec", "--file", "visits.csv", "--out", "out", "example.py")
		t.Logf("the manual's example (%v):\n%s", time.Since(begin).Round(time.Millisecond), out)
		for _, want := range []string{"mean   151.0", "max    190.0", "visits_trend.csv", "figure-1.png"} {
			if !strings.Contains(out, want) {
				t.Errorf("the output lacks %q", want)
			}
		}
		png, err := os.ReadFile(filepath.Join(home, "out", "figure-1.png"))
		if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("figure-1.png is no PNG: %v", err)
		}
	})
	t.Logf("whole test: %v", time.Since(start).Round(time.Second))
}

// buildTree makes tree the image's root filesystem without runblock, from
// the cache or from Debian's mirror, and returns the size of the image
// after each stage.
func buildTree(t *testing.T, img image, tree string) []int64 {
	t.Helper()
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	base, key := img.baseKey()+".tar", img.key()
	var sizes []int64
	if b, err := os.ReadFile(filepath.Join(rootfsCache, key+".json")); err == nil && json.Unmarshal(b, &sizes) == nil &&
		len(sizes) == len(img.runs) && cached(key+".tar") {
		command(t, "tar", "-C", tree, "--numeric-owner", "-xpf", filepath.Join(rootfsCache, key+".tar"))
		t.Logf("tree %s from %s", key, rootfsCache)
		return sizes
	}
	sizes = nil
	if cached(base) {
		command(t, "tar", "-C", tree, "--numeric-owner", "-xpf", filepath.Join(rootfsCache, base))
		t.Logf("base tree %s from %s", base, rootfsCache)
	} else {
		debootstrap(t, img.suite, tree)
		store(t, tree, base)
	}
	for i, stage := range img.runs {
		user := "root"
		for _, in := range stage {
			if in.cmd == "USER" {
				user = in.args
				continue
			}
			if user != "root" && user != "0" {
				t.Fatalf("line %d: RUN as USER %s: this test runs RUN lines as root only", in.line, user)
			}
			begin := time.Now()
			// The RUN line itself, in the tree, as docker build runs it: by
			// /bin/sh -c as root, with /proc and /dev.
			command(t, "unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-ec",
				`mount -t proc proc "$1/proc"; mount --rbind /dev "$1/dev"; exec chroot "$1" /bin/sh -c "$2"`,
				"sh", tree, in.args)
			t.Logf("RUN (line %d) in %v", in.line, time.Since(begin).Round(time.Second))
		}
		sizes = append(sizes, treeSize(t, tree))
		t.Logf("stage %s: %d MiB", img.names[i], sizes[i]>>20)
	}
	store(t, tree, key+".tar")
	b, _ := json.Marshal(sizes)
	if err := os.WriteFile(filepath.Join(rootfsCache, key+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	// Keep only this base and this image.
	entries, _ := os.ReadDir(rootfsCache)
	for _, e := range entries {
		if e.Name() != base && !strings.HasPrefix(e.Name(), key+".") {
			_ = os.Remove(filepath.Join(rootfsCache, e.Name()))
		}
	}
	return sizes
}

// debootstrap makes tree a minbase tree of Debian's suite, made slim as
// Debian's -slim images are.
func debootstrap(t *testing.T, suite, tree string) {
	t.Helper()
	if conn, err := net.DialTimeout("tcp", "deb.debian.org:80", 10*time.Second); err != nil {
		t.Skipf("Debian's mirror is out of reach: %v", err)
	} else {
		conn.Close()
	}
	begin := time.Now()
	command(t, "debootstrap", "--variant=minbase", suite, tree, debianMirror)
	for name, content := range slimConfig {
		if err := os.WriteFile(filepath.Join(tree, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range slimRemove {
		if err := os.RemoveAll(filepath.Join(tree, dir)); err != nil {
			t.Fatal(err)
		}
	}
	docs, _ := filepath.Glob(filepath.Join(tree, "usr/share/doc/*/*"))
	for _, doc := range docs {
		if filepath.Base(doc) != "copyright" {
			_ = os.RemoveAll(doc)
		}
	}
	// As in the official image: no package lists, no downloaded packages.
	for _, dir := range []string{"var/lib/apt/lists", "var/cache/apt/archives"} {
		files, _ := filepath.Glob(filepath.Join(tree, dir, "*"))
		for _, f := range files {
			if filepath.Base(f) != "partial" && filepath.Base(f) != "lock" {
				_ = os.RemoveAll(f)
			}
		}
	}
	t.Logf("debootstrap %s in %v", suite, time.Since(begin).Round(time.Second))
}

// treeSize is what an image layer of tree holds: the bytes of its files
// and links, as docker counts an image's size.
func treeSize(t *testing.T, tree string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(tree, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0 {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func command(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", "LANG=C.UTF-8"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// enter runs args in tree as the image would: new mount, PID, network, UTS
// and IPC namespaces, the tree as root by pivot_root, a fresh /proc and a
// tmpfs /tmp, the image's WORKDIR and ENV, and nothing else of ours, as
// user (setpriv's options) with stdin.
func enter(tree string, img image, user, stdin string, args ...string) (string, error) {
	script := `root=$1 user=$2 dir=$3; shift 3
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mount --rbind /dev "$root/dev"
mkdir -p "$root/.oldroot"
cd "$root"
pivot_root . .oldroot
umount -l /.oldroot
cd "$dir"
exec setpriv $user -- "$@"`
	env := append([]string{"env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + img.dir}, img.env...)
	cmd := exec.Command("unshare", append([]string{"--mount", "--pid", "--fork", "--net", "--uts", "--ipc", "--propagation", "private", "--",
		"/bin/sh", "-ec", script, "sh", tree, user, img.dir}, append(env, args...)...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// imageUser is setpriv's options for the image's USER.
func imageUser(img image) string {
	uid, gid, _ := strings.Cut(img.user, ":")
	if gid == "" {
		gid = uid
	}
	return fmt.Sprintf("--reuid=%s --regid=%s --init-groups", uid, gid)
}

// readmeExample returns the CSV and the snippet of the sandbox manual's
// Example (executor/sandbox/README.md): the first two fenced blocks after
// its heading.
func readmeExample(t *testing.T) (csv, code string) {
	t.Helper()
	b, err := os.ReadFile("../executor/sandbox/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "### Example\n")
	if !ok {
		t.Fatal("executor/sandbox/README.md has no Example section")
	}
	blocks := regexp.MustCompile("(?s)```[a-z]*\n(.*?)```").FindAllStringSubmatch(after, 2)
	if len(blocks) < 2 || !strings.Contains(blocks[1][1], "pandas") {
		t.Fatal("executor/sandbox/README.md's Example does not start with a CSV and a pandas snippet")
	}
	return blocks[0][1], blocks[1][1]
}
