package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// entry is one file of an archive. Folders are implied by the paths.
type entry struct {
	name string
	data []byte
	exec bool // mode 0755, else 0644
}

func (e entry) mode() int64 {
	if e.exec {
		return 0o755
	}
	return 0o644
}

// sortEntries puts entries in path order.
func sortEntries(es []entry) {
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
}

// archive writes mcpflow_V_OS_ARCH.tar.gz (.zip for windows): one folder
// of that name holding the binary, LICENSE and README.md.
func (r *release) archive(t target, bin []byte) error {
	base := "mcpflow_" + r.fileVersion() + "_" + t.goos + "_" + t.goarch
	es := []entry{
		{name: base + "/" + t.exe(), data: bin, exec: true},
		{name: base + "/LICENSE", data: r.license},
		{name: base + "/README.md", data: r.readme},
	}
	if t.goos == "windows" {
		sortEntries(es)
		return writeFile(filepath.Join(r.out, base+".zip"), zipBytes(es, r.mtime))
	}
	return writeFile(filepath.Join(r.out, base+".tar.gz"), tgzBytes(es, r.mtime, true))
}

// tgzBytes is a gzipped tar of es in path order, every header the same
// but for name, size and mode (uid and gid 0, no user or group name, mtime
// t); with dirs, each folder gets its own entry (mode 0755) first.
func tgzBytes(es []entry, t time.Time, dirs bool) []byte {
	sortEntries(es)
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression) // header: no name, mtime 0
	tw := tar.NewWriter(gz)
	seen := map[string]bool{}
	for _, e := range es {
		if dirs {
			for i := range e.name {
				if dir := e.name[:i+1]; e.name[i] == '/' && !seen[dir] {
					seen[dir] = true
					must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: t, Format: tar.FormatUSTAR}))
				}
			}
		}
		must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: e.mode(), Size: int64(len(e.data)), ModTime: t, Format: tar.FormatUSTAR}))
		_, err := tw.Write(e.data)
		must(err)
	}
	must(tw.Close())
	must(gz.Close())
	return buf.Bytes()
}

// zipBytes is a zip of es in the order given, deflated, each with mtime t
// and its Unix mode (which keeps the binary's executable bit).
func zipBytes(es []entry, t time.Time) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.DefaultCompression)
	})
	for _, e := range es {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: t.UTC()}
		h.SetMode(os.FileMode(e.mode()))
		w, err := zw.CreateHeader(h)
		must(err)
		_, err = w.Write(e.data)
		must(err)
	}
	must(zw.Close())
	return buf.Bytes()
}

// must panics on the errors that writing to memory cannot return.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

func writeFile(path string, data []byte) error {
	return os.WriteFile(path, data, 0o644)
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// lf turns CRLF into LF, so that a checkout with autocrlf packs the same
// text files.
func lf(b []byte) []byte {
	return []byte(strings.ReplaceAll(string(b), "\r\n", "\n"))
}
