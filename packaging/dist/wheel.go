package main

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// wheel writes mcpflow-PV-py3-none-TAGS.whl: the Python package
// packaging/python/mcpflow with t's binary as mcpflow/bin/mcpflow (.exe),
// and the console script mcpflow, which runs it (mcpflow/__main__.py). A
// wheel is a zip: the files, then the .dist-info folder (METADATA, WHEEL,
// entry_points.txt, LICENSE, and RECORD last with every other file's
// sha256 and size). The zip keeps the binary's mode, so pip and uv install
// it executable.
func (r *release) wheel(t target, bin []byte) error {
	src := filepath.Join(r.root, "packaging", "python", "mcpflow")
	var files []entry
	for _, name := range []string{"__init__.py", "__main__.py"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return err
		}
		files = append(files, entry{name: "mcpflow/" + name, data: lf(data)})
	}
	files = append(files, entry{name: "mcpflow/bin/" + t.exe(), data: bin, exec: true})
	sortEntries(files)

	info := "mcpflow-" + r.pyVer + ".dist-info/"
	tags := strings.Join(t.wheelTags, ".")
	var wheel strings.Builder
	wheel.WriteString("Wheel-Version: 1.0\nGenerator: mcpflow packaging/dist\nRoot-Is-Purelib: false\n")
	for _, tag := range t.wheelTags {
		fmt.Fprintf(&wheel, "Tag: py3-none-%s\n", tag)
	}
	meta := []entry{
		{name: info + "LICENSE", data: r.license},
		{name: info + "METADATA", data: []byte(r.metadata())},
		{name: info + "WHEEL", data: []byte(wheel.String())},
		{name: info + "entry_points.txt", data: []byte("[console_scripts]\nmcpflow = mcpflow.__main__:main\n")},
	}
	sortEntries(meta)
	all := append(files, meta...)
	var record strings.Builder
	for _, e := range all {
		sum := sha256.Sum256(e.data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", e.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(e.data))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	all = append(all, entry{name: info + "RECORD", data: []byte(record.String())})

	name := fmt.Sprintf("mcpflow-%s-py3-none-%s.whl", r.pyVer, tags)
	return writeFile(filepath.Join(r.out, "pypi", name), zipBytes(all, r.mtime))
}

// metadata is the wheel's METADATA (core metadata 2.1), with the package
// README as its description.
func (r *release) metadata() string {
	return fmt.Sprintf(`Metadata-Version: 2.1
Name: mcpflow
Version: %s
Summary: Hot reload for MCP servers: rebuilds and restarts your server when its code changes, without losing the client's session.
Home-page: %s
License: MIT
Keywords: mcp,model-context-protocol,hot-reload,dev-server
Classifier: Development Status :: 4 - Beta
Classifier: Environment :: Console
Classifier: Intended Audience :: Developers
Classifier: License :: OSI Approved :: MIT License
Classifier: Programming Language :: Go
Classifier: Topic :: Software Development :: Build Tools
Project-URL: Source, %s
Requires-Python: >=3.8
Description-Content-Type: text/markdown

%s`, r.pyVer, repoURL, repoURL, r.pkgDoc)
}
