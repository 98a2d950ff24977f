// Package image builds, serves, stores and inspects gray-controller's
// container image without a Docker engine: a minimal base image made here
// with go-containerregistry, an in-process registry on 127.0.0.1 for ko to
// pull that base from and push the result to, and an OCI image layout on disk
// that keeps the result for the tests once that registry is gone.
package image

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// NonRootUID is the user (and group) the controller runs as: distroless's
// "nonroot", the runAsUser of manifests/base and of the chart.
const NonRootUID = 65532

// Platforms are the platforms of the release image, in index order.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// epoch is the timestamp of every file and of the base config, so that the
// same inputs give the same digest on every machine.
var epoch = time.Unix(0, 0).UTC()

// Paths of what the base image carries; tests check for them.
const (
	PasswdPath   = "etc/passwd"
	GroupPath    = "etc/group"
	CABundlePath = "etc/ssl/certs/ca-certificates.crt"
	ZoneinfoDir  = "usr/share/zoneinfo"
)

// passwd and group mirror distroless static: root, nobody and nonroot, all
// without a login shell (the image has none).
const passwd = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
`

const group = `root:x:0:
nobody:x:65534:
nonroot:x:65532:
`

// Base builds the test base image: an index of Platforms whose images share
// one layer holding passwd/group with the non-root user, a CA bundle, the
// time-zone database, /tmp and the non-root user's home, and nothing else
// (no shell, no package manager, no libc), with user 65532 in the config.
//
// Every input is pinned: the CA bundle is the Mozilla NSS root set of
// golang.org/x/crypto/x509roots/fallback at the version in test/go.sum, the
// zone files come from the Go toolchain's own zoneinfo.zip (what Go programs
// fall back to anyway), and all timestamps are the Unix epoch. So the digest
// depends only on go.sum and the Go version, not on the machine's packages.
func Base() (v1.ImageIndex, error) {
	layerTar, err := baseLayerTar()
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range Platforms {
		img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
			Layer:   layer,
			History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "kubectl-gray test/image: minimal static base"},
		})
		if err != nil {
			return nil, err
		}
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture, cfg.Created = p.OS, p.Architecture, v1.Time{Time: epoch}
		cfg.Config.User = fmt.Sprint(NonRootUID)
		cfg.Config.WorkingDir = "/"
		cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return nil, err
		}
		p := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx, nil
}

// tarEntry is one file or directory of the base layer.
type tarEntry struct {
	name string
	mode int64
	uid  int
	data []byte // nil for a directory
}

func baseLayerTar() ([]byte, error) {
	ca, err := caBundle()
	if err != nil {
		return nil, err
	}
	entries := []tarEntry{
		{name: "etc/", mode: 0o755},
		{name: PasswdPath, mode: 0o644, data: []byte(passwd)},
		{name: GroupPath, mode: 0o644, data: []byte(group)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: CABundlePath, mode: 0o644, data: ca},
		// Sticky and world-writable, as in distroless; with a read-only root
		// filesystem (the manifests' default) nothing can write here anyway.
		{name: "tmp/", mode: 0o1777},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: NonRootUID},
		{name: "usr/", mode: 0o755},
		{name: "usr/share/", mode: 0o755},
	}
	zones, err := zoneinfo()
	if err != nil {
		return nil, err
	}
	entries = append(entries, zones...)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: epoch, Format: tar.FormatPAX}
		if e.data == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// caBundle renders the NSS roots as one PEM file, the layout Go, OpenSSL
// and distroless use. Roots that carry a distrust-after date are left out:
// a PEM bundle cannot express the constraint, and trusting them without it
// would be wider than NSS (Debian's ca-certificates leaves them out too).
func caBundle() ([]byte, error) {
	var buf bytes.Buffer
	n := 0
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("x509roots/fallback/bundle has no unconstrained roots")
	}
	return buf.Bytes(), nil
}

// zoneinfo unpacks the Go toolchain's lib/time/zoneinfo.zip into
// usr/share/zoneinfo, directories first, in name order.
func zoneinfo() ([]tarEntry, error) {
	// runtime.GOROOT is deprecated; ask the go command that runs the build.
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOROOT: %w", err)
	}
	zipPath := filepath.Join(strings.TrimSpace(string(goroot)), "lib", "time", "zoneinfo.zip")
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, fmt.Errorf("time-zone database: %w", err)
	}
	defer func() { _ = zr.Close() }()
	dirs := map[string]bool{ZoneinfoDir + "/": true}
	var files []tarEntry
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		name := ZoneinfoDir + "/" + f.Name
		if strings.Contains(f.Name, "..") {
			return nil, fmt.Errorf("zoneinfo.zip: suspicious name %q", f.Name)
		}
		for d := filepath.Dir(name); d != ZoneinfoDir && d != "."; d = filepath.Dir(d) {
			dirs[d+"/"] = true
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		files = append(files, tarEntry{name: name, mode: 0o644, data: data})
	}
	var out []tarEntry
	for d := range dirs {
		out = append(out, tarEntry{name: d, mode: 0o755})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return append(out, files...), nil
}
