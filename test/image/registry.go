package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is an in-process OCI registry on a free 127.0.0.1 port. It keeps
// everything in memory and lives as long as the process that started it;
// go-containerregistry (and so ko) talks plain HTTP to loopback registries.
type Registry struct {
	// Host is "127.0.0.1:PORT", the registry part of image references.
	Host string
	srv  *http.Server
}

// StartRegistry serves a registry until Close.
func StartRegistry() (*Registry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// Referrers on, so SBOMs are found the OCI 1.1 way as well as by tag.
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true))
	r := &Registry{Host: ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Close stops the registry; its content is gone.
func (r *Registry) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.srv.Shutdown(ctx)
}

// Repo is the full name of repository repo on this registry.
func (r *Registry) Repo(repo string) string { return r.Host + "/" + repo }

// sbomSuffix is how ko (and cosign) tag an image's SBOM:
// <repo>:sha256-<hex of the image digest>.sbom.
const sbomSuffix = ".sbom"

// refNameAnnotation names an entry of an OCI layout's index.json.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// SaveLayout copies the index at ref, and every SBOM ko pushed next to it,
// from a registry into a new OCI image layout at dir; the index entry is
// named by ref's tag, each SBOM by its own tag.
func SaveLayout(ref name.Reference, dir string) (v1.Hash, error) {
	idx, err := remote.Index(ref)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	tag := "latest"
	if t, ok := ref.(name.Tag); ok {
		tag = t.TagStr()
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnnotation: tag})); err != nil {
		return v1.Hash{}, err
	}
	tags, err := remote.List(ref.Context())
	if err != nil {
		return v1.Hash{}, fmt.Errorf("list tags of %s: %w", ref.Context(), err)
	}
	for _, t := range tags {
		if !strings.HasSuffix(t, sbomSuffix) {
			continue
		}
		sbom, err := remote.Image(ref.Context().Tag(t))
		if err != nil {
			return v1.Hash{}, fmt.Errorf("pull SBOM %s: %w", t, err)
		}
		if err := p.AppendImage(sbom, layout.WithAnnotations(map[string]string{refNameAnnotation: t})); err != nil {
			return v1.Hash{}, err
		}
	}
	return digest, nil
}

// PushLayout pushes every entry of the OCI layout at dir into repo, each
// under the tag its layout entry is named by, and returns the reference of
// the image index (the entry that is an index, not an SBOM).
func PushLayout(dir string, repo name.Repository) (name.Tag, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return name.Tag{}, err
	}
	root, err := p.ImageIndex()
	if err != nil {
		return name.Tag{}, err
	}
	m, err := root.IndexManifest()
	if err != nil {
		return name.Tag{}, err
	}
	var main name.Tag
	for _, d := range m.Manifests {
		tag := repo.Tag(d.Annotations[refNameAnnotation])
		if d.MediaType.IsIndex() {
			idx, err := root.ImageIndex(d.Digest)
			if err != nil {
				return name.Tag{}, err
			}
			if err := remote.WriteIndex(tag, idx); err != nil {
				return name.Tag{}, fmt.Errorf("push %s: %w", tag, err)
			}
			main = tag
			continue
		}
		img, err := root.Image(d.Digest)
		if err != nil {
			return name.Tag{}, err
		}
		if err := remote.Write(tag, img); err != nil {
			return name.Tag{}, fmt.Errorf("push %s: %w", tag, err)
		}
	}
	if main.String() == "" {
		return name.Tag{}, errors.New("the layout holds no image index")
	}
	return main, nil
}

// SBOMTag is where ko puts the SBOM of the image with digest d in repo.
func SBOMTag(repo name.Repository, d v1.Hash) name.Tag {
	return repo.Tag(d.Algorithm + "-" + d.Hex + sbomSuffix)
}
