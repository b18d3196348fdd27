package deploy

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	systemdUnitPath = "deploy/systemd/claude-transcript-exporter.service"
	launchdPlist    = "deploy/launchd/io.github.claude-transcript-exporter.plist"
)

// TestSystemdUnitVerifies runs `systemd-analyze --user verify` on the user
// unit. %h is pointed at a scratch home holding a stand-in executable at
// ~/.local/bin/claude-transcript-exporter, where the install steps put the
// binary, so that verify's "is executable" check is about the unit's path.
func TestSystemdUnitVerifies(t *testing.T) {
	sa := needTool(t, "systemd-analyze", "apt-get install -y systemd (Debian), or run .ci/run")
	home := t.TempDir()
	bin := filepath.Join(home, ".local", "bin", "claude-transcript-exporter")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	runtimeDir := t.TempDir()
	if err := os.Chmod(runtimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), filepath.Base(systemdUnitPath))
	data, err := os.ReadFile(repoPath(t, systemdUnitPath))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unit, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := runTool(t, []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + runtimeDir, "SYSTEMD_LOG_LEVEL=notice"},
		sa, "--user", "verify", unit)
	if strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify printed warnings:\n%s", out)
	}

	// What the issue asks of the unit, beyond being valid.
	text := string(data)
	for _, want := range []string{
		"Restart=on-failure",
		"StandardOutput=journal",
		"StandardError=journal",
		"WantedBy=default.target",
		"--web.listen-address=127.0.0.1:9812",
		"--state.file=",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q", systemdUnitPath, want)
		}
	}
}

// plistValue is a decoded property-list value: string, bool, int64 (as
// string), []plistValue or map[string]plistValue.
type plistValue any

// decodePlist parses an XML property list with encoding/xml (strict), the
// DOCTYPE and comments included.
func decodePlist(r io.Reader) (map[string]plistValue, error) {
	dec := xml.NewDecoder(r)
	dec.Strict = true
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("no <plist> element: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if se.Name.Local != "plist" {
			return nil, fmt.Errorf("root element <%s>, want <plist>", se.Name.Local)
		}
		v, err := plistNext(dec)
		if err != nil {
			return nil, err
		}
		dict, ok := v.(map[string]plistValue)
		if !ok {
			return nil, fmt.Errorf("plist root is %T, want dict", v)
		}
		// Nothing but the closing </plist> and whitespace may follow.
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				return dict, nil
			}
			if err != nil {
				return nil, err
			}
			switch tk := tok.(type) {
			case xml.StartElement:
				return nil, fmt.Errorf("unexpected <%s> after the root dict", tk.Name.Local)
			case xml.CharData:
				if strings.TrimSpace(string(tk)) != "" {
					return nil, fmt.Errorf("unexpected text %q after the root dict", tk)
				}
			}
		}
	}
}

// plistNext reads the next value element.
func plistNext(dec *xml.Decoder) (plistValue, error) {
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			return plistElement(dec, tk)
		case xml.EndElement:
			return nil, errEnd
		case xml.CharData:
			if strings.TrimSpace(string(tk)) != "" {
				return nil, fmt.Errorf("stray text %q", tk)
			}
		}
	}
}

var errEnd = fmt.Errorf("end of container")

func plistElement(dec *xml.Decoder, se xml.StartElement) (plistValue, error) {
	switch se.Name.Local {
	case "string", "integer", "real", "date", "data":
		var s string
		if err := dec.DecodeElement(&s, &se); err != nil {
			return nil, err
		}
		return s, nil
	case "true", "false":
		if err := dec.Skip(); err != nil {
			return nil, err
		}
		return se.Name.Local == "true", nil
	case "array":
		var arr []plistValue
		for {
			v, err := plistNext(dec)
			if err == errEnd {
				return arr, nil
			}
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
	case "dict":
		dict := map[string]plistValue{}
		for {
			k, err := plistNext(dec)
			if err == errEnd {
				return dict, nil
			}
			if err != nil {
				return nil, err
			}
			key, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("dict key is %T, want <key>", k)
			}
			if _, dup := dict[key]; dup {
				return nil, fmt.Errorf("duplicate key %q", key)
			}
			v, err := plistNext(dec)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", key, err)
			}
			dict[key] = v
		}
	case "key":
		var s string
		if err := dec.DecodeElement(&s, &se); err != nil {
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("unknown plist element <%s>", se.Name.Local)
}

func TestLaunchdPlistWellFormed(t *testing.T) {
	f, err := os.Open(repoPath(t, launchdPlist))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := decodePlist(f)
	if err != nil {
		t.Fatalf("%s: %v", launchdPlist, err)
	}
	label, _ := d["Label"].(string)
	if want := strings.TrimSuffix(filepath.Base(launchdPlist), ".plist"); label != want {
		t.Errorf("Label = %q, want %q (the file name)", label, want)
	}
	args, _ := d["ProgramArguments"].([]plistValue)
	if len(args) == 0 {
		t.Fatalf("ProgramArguments missing or empty")
	}
	var argv []string
	for _, a := range args {
		s, ok := a.(string)
		if !ok {
			t.Fatalf("ProgramArguments holds %T, want strings", a)
		}
		argv = append(argv, s)
	}
	if !strings.HasPrefix(argv[0], "__HOME__/") || !strings.HasSuffix(argv[0], "/claude-transcript-exporter") {
		t.Errorf("program %q: want __HOME__/.../claude-transcript-exporter (sed-substituted at install)", argv[0])
	}
	if !slices.Contains(argv, "--web.listen-address=127.0.0.1:9812") {
		t.Errorf("ProgramArguments %q lack --web.listen-address=127.0.0.1:9812", argv)
	}
	if d["RunAtLoad"] != true {
		t.Errorf("RunAtLoad = %v, want true", d["RunAtLoad"])
	}
	keep, _ := d["KeepAlive"].(map[string]plistValue)
	if keep == nil || keep["SuccessfulExit"] != false {
		t.Errorf("KeepAlive = %v, want {SuccessfulExit: false} (restart on failure)", d["KeepAlive"])
	}
	for _, k := range []string{"StandardOutPath", "StandardErrorPath"} {
		if p, _ := d[k].(string); !strings.HasPrefix(p, "__HOME__/Library/Logs/") {
			t.Errorf("%s = %q, want a log file under ~/Library/Logs", k, p)
		}
	}
}

func TestDecodePlistRejectsBadInput(t *testing.T) {
	for name, src := range map[string]string{
		"not xml":           "Label = x",
		"unclosed":          "<plist><dict><key>Label</key><string>x</string></dict>",
		"wrong root":        "<dict><key>Label</key><string>x</string></dict>",
		"key without value": "<plist><dict><key>Label</key></dict></plist>",
		"duplicate key":     "<plist><dict><key>A</key><true/><key>A</key><false/></dict></plist>",
		"unknown element":   "<plist><dict><key>A</key><bogus/></dict></plist>",
	} {
		if _, err := decodePlist(strings.NewReader(src)); err == nil {
			t.Errorf("%s: decodePlist accepted %q", name, src)
		}
	}
}
