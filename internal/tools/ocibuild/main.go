// Command ocibuild builds a container image for one static Go binary without a Docker engine,
// as an OCI image layout (a directory) and an OCI archive (that directory as a tar), both
// reproducible: the same inputs give the same digests.
//
// The image is distroless-style: no shell, no package manager. Its base layer holds only what
// a static Go program needs, taken from the build machine's Debian packages: /etc/passwd and
// /etc/group with a non-root user nonroot (65532), /etc/nsswitch.conf, the CA bundle of the
// ca-certificates package, /tmp and the user's home. The second layer is the binary, in
// /usr/local/bin (or -bindir), which is the entrypoint; the image runs as 65532:65532.
//
//	go run ./internal/tools/ocibuild -name policing -binary bin/images/policing.bin \
//	    -tag v0.1.0 -out bin/images
//
// writes bin/images/policing/ (oci-layout, index.json, blobs/) and bin/images/policing.oci.tar.
// Load it with `skopeo copy oci-archive:bin/images/policing.oci.tar docker://REGISTRY/...`,
// `podman load -i ...`, or Docker 25+ (`docker load -i ...`).
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	uid      = 65532
	userName = "nonroot"
	home     = "/home/nonroot"

	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type file struct {
	name string // absolute path in the image, without the leading /
	mode int64
	uid  int
	data []byte
	dir  bool
}

func main() {
	var (
		name    = flag.String("name", "", "image name, e.g. policing (also the binary's name in /usr/local/bin)")
		binary  = flag.String("binary", "", "static binary to put in the image")
		tag     = flag.String("tag", "dev", "tag (org.opencontainers.image.ref.name in index.json)")
		out     = flag.String("out", "bin/images", "output directory")
		caFile  = flag.String("ca", "/etc/ssl/certs/ca-certificates.crt", "CA bundle (Debian's ca-certificates)")
		arch    = flag.String("arch", runtime.GOARCH, "architecture of the binary")
		source  = flag.String("source", "https://github.com/openaaa/openaaa", "org.opencontainers.image.source")
		args    = flag.String("args", "", "default arguments (CMD), space separated")
		version = flag.String("version", "", "org.opencontainers.image.version (default: the tag)")
		binDir  = flag.String("bindir", "/usr/local/bin", "directory of the binary in the image (some operators run a fixed path, e.g. /bin/prometheus-config-reloader)")
	)
	flag.Parse()
	if *name == "" || *binary == "" {
		fmt.Fprintln(os.Stderr, "ocibuild: -name and -binary are required")
		os.Exit(2)
	}
	if *version == "" {
		*version = *tag
	}
	if err := build(*name, *binary, *tag, *version, *out, *caFile, *arch, *source, *args, *binDir); err != nil {
		fmt.Fprintln(os.Stderr, "ocibuild:", err)
		os.Exit(1)
	}
}

// created is SOURCE_DATE_EPOCH when set (reproducible builds), else the Unix epoch.
func created() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}

func build(name, binary, tag, version, out, caFile, arch, source, args, binDir string) error {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("CA bundle: %w (apt-get install ca-certificates)", err)
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", userName, uid, uid, userName, home)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", userName, uid)
	base := []file{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/ssl", mode: 0o755, dir: true},
		{name: "etc/ssl/certs", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca},
		{name: "home", mode: 0o755, dir: true},
		{name: "home/nonroot", mode: 0o700, uid: uid, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
	}
	binDir = strings.Trim(path.Clean("/"+binDir), "/")
	if binDir == "" || binDir == "etc" || binDir == "tmp" || binDir == "home" || strings.HasPrefix(binDir, "etc/") {
		return fmt.Errorf("-bindir %q: choose a directory outside the base layer", binDir)
	}
	var app []file
	for i, parts := 0, strings.Split(binDir, "/"); i < len(parts); i++ {
		app = append(app, file{name: strings.Join(parts[:i+1], "/"), mode: 0o755, dir: true})
	}
	exe := binDir + "/" + name
	app = append(app, file{name: exe, mode: 0o755, data: bin})

	// The layout is updated in place, never removed: a reader beside a rebuild (a test reading
	// bin/images while `make images` runs again) always finds an index.json whose blobs are
	// there. Blobs first, each renamed into place; index.json last; then the blobs no longer
	// named go.
	dir := filepath.Join(out, name)
	blobs := filepath.Join(dir, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	writeBlob := func(media string, b []byte) (descriptor, error) {
		sum := sha256.Sum256(b)
		hexSum := hex.EncodeToString(sum[:])
		keep[hexSum] = true
		d := descriptor{MediaType: media, Digest: "sha256:" + hexSum, Size: int64(len(b))}
		p := filepath.Join(blobs, hexSum)
		if st, err := os.Stat(p); err == nil && st.Size() == d.Size {
			return d, nil // content-addressed: the same name is the same bytes
		}
		return d, writeFile(out, p, b)
	}

	t := created()
	var layers []descriptor
	var diffIDs []string
	for _, l := range [][]file{base, app} {
		raw, gz, err := layer(l, t)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(raw)
		diffIDs = append(diffIDs, "sha256:"+hex.EncodeToString(sum[:]))
		d, err := writeBlob(mediaLayer, gz)
		if err != nil {
			return err
		}
		layers = append(layers, d)
	}

	labels := map[string]string{
		"org.opencontainers.image.title":    name,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.created":  t.Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	cfg := map[string]any{
		"created":      t.Format(time.RFC3339),
		"architecture": arch,
		"os":           "linux",
		"config": map[string]any{
			"User":       fmt.Sprintf("%d:%d", uid, uid),
			"Entrypoint": []string{"/" + exe},
			"Env": []string{
				"PATH=/usr/local/bin:/usr/bin:/bin",
				"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
				"HOME=" + home,
			},
			"WorkingDir": home,
			"Labels":     labels,
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs},
		"history": []map[string]any{
			{"created": t.Format(time.RFC3339), "created_by": "ocibuild: base (passwd, group, nsswitch, CA certificates, /tmp, " + home + ")"},
			{"created": t.Format(time.RFC3339), "created_by": "ocibuild: /" + exe},
		},
	}
	if args != "" {
		cfg["config"].(map[string]any)["Cmd"] = splitArgs(args)
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	cfgDesc, err := writeBlob(mediaConfig, cfgJSON)
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaManifest,
		"config":        cfgDesc,
		"layers":        layers,
		"annotations":   labels,
	})
	if err != nil {
		return err
	}
	mDesc, err := writeBlob(mediaManifest, manifest)
	if err != nil {
		return err
	}
	mDesc.Platform = &platform{Architecture: arch, OS: "linux"}
	mDesc.Annotations = map[string]string{"org.opencontainers.image.ref.name": tag}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaIndex,
		"manifests":     []descriptor{mDesc},
	})
	if err != nil {
		return err
	}
	if err := writeFile(out, filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := writeFile(out, filepath.Join(dir, "index.json"), index); err != nil {
		return err
	}
	old, err := os.ReadDir(blobs)
	if err != nil {
		return err
	}
	for _, e := range old {
		if !keep[e.Name()] {
			if err := os.Remove(filepath.Join(blobs, e.Name())); err != nil {
				return err
			}
		}
	}
	archive := filepath.Join(out, name+".oci.tar")
	if err := tarDir(dir, archive, t); err != nil {
		return err
	}
	fmt.Printf("%s:%s %s (%s, %s)\n", name, tag, mDesc.Digest, dir, archive)
	return nil
}

// writeFile replaces path with b at once (a temporary file in tmpDir, on the same file system,
// renamed): a reader sees the old bytes or the new ones, never a part.
func writeFile(tmpDir, path string, b []byte) error {
	f, err := os.CreateTemp(tmpDir, ".ocibuild-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func splitArgs(s string) []string {
	var out []string
	for _, f := range bytes.Fields([]byte(s)) {
		out = append(out, string(f))
	}
	return out
}

// layer returns the uncompressed and the gzipped tar of files, with fixed times and owners.
func layer(files []file, t time.Time) (raw, gz []byte, err error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: t, Format: tar.FormatPAX,
			Uname: "", Gname: "",
		}
		if f.dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, nil, err
		}
		if !f.dir {
			if _, err := tw.Write(f.data); err != nil {
				return nil, nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	raw = buf.Bytes()
	var z bytes.Buffer
	zw, err := gzip.NewWriterLevel(&z, gzip.DefaultCompression)
	if err != nil {
		return nil, nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, nil, err
	}
	return raw, z.Bytes(), nil
}

// tarDir writes the image layout dir as a tar (an OCI archive), sorted, with fixed times.
func tarDir(dir, archive string, t time.Time) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: t, Mode: 0o644, Format: tar.FormatPAX}
		if st.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.Typeflag, h.Size = tar.TypeReg, int64(len(b))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return writeFile(filepath.Dir(archive), archive, buf.Bytes())
}
