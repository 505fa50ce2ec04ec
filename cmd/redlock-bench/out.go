package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/redlock-go/redlock/bench/plots"
	"github.com/redlock-go/redlock/bench/report"
)

// latestDir is where results go by default, under the repository root.
// .gitignore lists it, so that a run leaves the checkout clean; the
// committed results are written only on request (--commit-results, --out).
const latestDir = "results/latest"

// outDir returns the directory that a run on servers of the given mode
// ("redis-server", "miniredis-pinned", ...), or --replot, writes to: --out
// if given; with --commit-results, the committed results/<mode> of the
// repository, or the replotted directory itself; otherwise results/latest
// of the repository (of the working directory outside it).
func outDir(cfg *config, mode string) (string, error) {
	switch {
	case cfg.out != "":
		return cfg.out, nil
	case cfg.commit && cfg.replot != "":
		return cfg.replot, nil
	}
	root, err := repoRoot()
	switch {
	case cfg.commit && err != nil:
		return "", fmt.Errorf("--commit-results: %w (use --out)", err)
	case cfg.commit:
		return filepath.Join(root, "results", mode), nil
	case err != nil:
		return filepath.FromSlash(latestDir), nil
	}
	return filepath.Join(root, filepath.FromSlash(latestDir)), nil
}

// writeResults writes run's plots, run.json and results.md into dir, which
// it creates, removes the plots of an earlier run that this one does not
// draw, and returns the names of the files written.
func writeResults(dir string, run report.Run) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: results are for reading, as the repository is
		return nil, err
	}
	drawn, err := plots.Write(dir, run.Records, run.Env.ProxyDelayMs)
	if err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	for _, f := range plots.Files {
		if !slices.Contains(drawn, f) {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, fs.ErrNotExist) { //nolint:gosec // G703: dir is the output directory the user chose
				return nil, err
			}
		}
	}
	if err := report.WriteFiles(dir, run, drawn); err != nil {
		return nil, err
	}
	return append([]string{"run.json", "results.md"}, drawn...), nil
}

// displayPath returns dir relative to the working directory when it is
// under it, for messages.
func displayPath(dir string) string {
	wd, err := os.Getwd()
	if err != nil {
		return dir
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	if rel, err := filepath.Rel(wd, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return abs
}
