// Command image builds gray-controller's image with ko on a machine without a
// Docker engine or a reachable registry (`make image`):
//
//	go run ./cmd/image build -out DIR -- ko build [flags] ./cmd/gray-controller
//
// It starts an in-process registry on 127.0.0.1, pushes the minimal base
// image of package image into it, runs the given ko command with
// KO_DOCKER_REPO and KO_DEFAULTBASEIMAGE pointing there, and saves the index
// ko pushed, with its SBOMs, as an OCI image layout in DIR/oci. It also takes
// the linux/amd64 gray-controller binary out of the image into DIR/bin, where
// the e2e suites find it, and prints each platform's compressed size.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kubegray/kubectl-gray/test/image"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "build" {
		fmt.Fprintln(os.Stderr, "usage: image build -out DIR [-repo REPO] -- KO-COMMAND...")
		os.Exit(2)
	}
	if err := build(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	out := fs.String("out", "", "folder for the OCI layout (oci/) and the extracted binary (bin/)")
	repoName := fs.String("repo", "kubegray/gray-controller", "repository on the local registry")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ko := fs.Args()
	if *out == "" || len(ko) == 0 {
		return fmt.Errorf("-out and a ko command after -- are required")
	}
	reg, err := image.StartRegistry()
	if err != nil {
		return err
	}
	defer func() { _ = reg.Close() }()

	base, err := image.Base()
	if err != nil {
		return fmt.Errorf("build base image: %w", err)
	}
	baseRef, err := name.ParseReference(reg.Repo("kubegray/static-base:test"))
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(baseRef, base); err != nil {
		return fmt.Errorf("push base image: %w", err)
	}
	baseDigest, err := base.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "image: base %s@%s on the in-process registry\n", baseRef.Context(), baseDigest)

	repo := reg.Repo(*repoName)
	var stdout bytes.Buffer
	cmd := exec.Command(ko[0], ko[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	cmd.Env = append(os.Environ(),
		"KO_DOCKER_REPO="+repo,
		"KO_DEFAULTBASEIMAGE="+baseRef.Context().Digest(baseDigest.String()).String(),
	)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(ko, " "), err)
	}
	// ko prints the reference of what it pushed, by digest, on its last line.
	lines := strings.Fields(stdout.String())
	if len(lines) == 0 {
		return fmt.Errorf("ko printed no image reference")
	}
	built, err := name.ParseReference(lines[len(lines)-1])
	if err != nil {
		return fmt.Errorf("ko's output %q: %w", stdout.String(), err)
	}
	tag, err := tagOf(ko)
	if err != nil {
		return err
	}
	tagged, err := name.NewTag(repo + ":" + tag)
	if err != nil {
		return err
	}
	got, err := remote.Head(tagged)
	if err != nil {
		return fmt.Errorf("tag %s: %w", tagged, err)
	}
	if got.Digest.String() != built.Identifier() {
		return fmt.Errorf("tag %s points at %s, not at %s", tagged, got.Digest, built)
	}

	layoutDir := filepath.Join(*out, "oci")
	if err := os.RemoveAll(layoutDir); err != nil {
		return err
	}
	digest, err := image.SaveLayout(tagged, layoutDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "image: %s@%s saved to %s\n", tagged, digest, layoutDir)
	return report(layoutDir, filepath.Join(*out, "bin"))
}

// tagOf returns the value of ko's --tags flag (one tag), which the layout
// entry is named by.
func tagOf(ko []string) (string, error) {
	for i, a := range ko {
		if v, ok := strings.CutPrefix(a, "--tags="); ok {
			if strings.Contains(v, ",") {
				return "", fmt.Errorf("give ko exactly one tag, not %q", v)
			}
			return v, nil
		}
		if a == "--tags" && i+1 < len(ko) {
			return tagOf([]string{"--tags=" + ko[i+1]})
		}
	}
	return "latest", nil
}

// report prints each platform's compressed size and writes the host
// platform's entrypoint binary into binDir.
func report(layoutDir, binDir string) error {
	p, err := layout.FromPath(layoutDir)
	if err != nil {
		return err
	}
	root, err := p.ImageIndex()
	if err != nil {
		return err
	}
	m, err := root.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range m.Manifests {
		if !d.MediaType.IsIndex() {
			continue
		}
		idx, err := root.ImageIndex(d.Digest)
		if err != nil {
			return err
		}
		for _, plat := range image.Platforms {
			img, err := image.PlatformImage(idx, plat)
			if err != nil {
				return err
			}
			s, err := image.Summarize(img)
			if err != nil {
				return err
			}
			fmt.Printf("%s\t%s\t%.1f MiB compressed\n", plat, s.Digest, float64(s.Compressed)/(1<<20))
			if plat.Architecture != runtime.GOARCH || len(s.Config.Entrypoint) != 1 {
				continue
			}
			bin, err := image.ReadFile(img, s.Config.Entrypoint[0])
			if err != nil {
				return err
			}
			if err := os.MkdirAll(binDir, 0o755); err != nil {
				return err
			}
			target := filepath.Join(binDir, filepath.Base(s.Config.Entrypoint[0]))
			if err := os.WriteFile(target+".tmp", bin, 0o755); err != nil {
				return err
			}
			if err := os.Rename(target+".tmp", target); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "image: %s taken out of the %s image\n", target, plat)
		}
	}
	return nil
}
