package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tpclient "github.com/Shopify/toxiproxy/v2/client"
)

// toxiproxyRun runs netemu toxiproxy in the background on a free
// loopback port until the test ends, and returns the API's address once
// it answers.
func toxiproxyRun(t *testing.T, args ...string) string {
	t.Helper()
	api := freeAddr(t)
	return toxiproxyAt(t, api, append([]string{"--listen", api}, args...)...)
}

// toxiproxyAt runs netemu toxiproxy with args, which make it listen on
// api, until the test ends.
func toxiproxyAt(t *testing.T, api string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var o, e bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"toxiproxy"}, args...), &o, &e) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("netemu toxiproxy ended with status %d: %s", code, e.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if v, err := tpclient.NewClient(api).Version(); err == nil {
			var ver struct{ Version string }
			if err := json.Unmarshal(v, &ver); err != nil || !semver.MatchString(ver.Version) || !strings.HasPrefix(ver.Version, toxiproxyAPIVersion+"+netemu") {
				t.Fatalf("version: %s; want a semantic version, toxiproxy's API's with netemu's as build metadata", v)
			}
			return api
		}
		if time.Now().After(deadline) {
			t.Fatal("netemu toxiproxy does not answer")
		}
	}
}

// semver is semver.org's regular expression of a version.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// The version is a semantic version whatever netemu's own looks like.
func TestToxiproxyVersion(t *testing.T) {
	for _, v := range []string{"(devel)", "(unknown)", "v0.0.0-20261207043501-96cf8d3abcde", "v0.0.0-20261207043501-96cf8d3abcde+dirty", "v1.2.3", ""} {
		if got := toxiproxyVersion(v); !semver.MatchString(got) {
			t.Errorf("netemu %q: /version %q is not a semantic version", v, got)
		}
	}
	if got := toxiproxyVersion("(devel)"); got != "2.12.0+netemu.devel" {
		t.Errorf("(devel): %q", got)
	}
}

// SIGTERM stops netemu toxiproxy with status 0, as toxiproxy-server, so
// that a container runtime reads the stop as clean.
func TestToxiproxySIGTERM(t *testing.T) {
	api := freeAddr(t)
	cmd := exec.Command(netemuBin(t), "toxiproxy", "--listen", api)
	var e bytes.Buffer
	cmd.Stderr = &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := tpclient.NewClient(api).Version(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("netemu toxiproxy does not answer: %s", e.String())
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v; want exit status 0\n%s", err, e.String())
	}
}

// Bad input is one line and status 2, with nothing left listening.
func TestToxiproxyBadInput(t *testing.T) {
	busy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"toxiproxy", "--listen", "bad"}, `toxiproxy: --listen "bad": want host:port`},
		{[]string{"toxiproxy", "--listen", busy.Addr().String()}, "address already in use"},
		{[]string{"toxiproxy", "--rtt", "10ms,20ms"}, "--rtt has 2 values"},
		{[]string{"toxiproxy", "--pcap", "x.pcap"}, "--pcap does not apply"},
		{[]string{"toxiproxy", "extra"}, `unexpected argument "extra"`},
		{[]string{"toxiproxy", "--max-conns", "0"}, "--max-conns 0: want 1 or more"},
	} {
		code, out, errOut := runNetemu(c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("netemu %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
	}
}

// toxiproxy-server's flags, as Testcontainers for Go passes them
// (-host=0.0.0.0 -config=FILE): the proxies of the file are made before
// the API answers.
func TestToxiproxyServerFlags(t *testing.T) {
	up, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	listen := freeAddr(t)
	config := filepath.Join(t.TempDir(), "tc-toxiproxy.json")
	os.WriteFile(config, []byte(`[{"name":"db","listen":"`+listen+`","upstream":"`+up.Addr().String()+`","enabled":true}]`), 0o644)
	api := freeAddr(t)
	_, port, _ := net.SplitHostPort(api)
	toxiproxyAt(t, api, "-host=127.0.0.1", "-port="+port, "-config="+config)
	p, err := tpclient.NewClient(api).Proxy("db")
	if err != nil || p.Listen != listen || !p.Enabled {
		t.Fatalf("the proxy of --config: %+v, %v", p, err)
	}
	c, err := net.Dial("tcp4", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	u, err := up.Accept()
	if err != nil {
		t.Fatal(err)
	}
	u.Close()

	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`[{"name":"x"}]`), 0o644)
	code, _, errOut := runNetemu("toxiproxy", "--listen", freeAddr(t), "--config", bad)
	if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "missing required field: upstream at proxy 1") {
		t.Errorf("--config with a proxy without upstream: exit %d, %q; want 2 and one line", code, errOut)
	}
}

// toxiproxyCLI builds toxiproxy-cli from toxiproxy's module (the version
// go.mod names) into a temporary directory, once; the test is skipped
// when it cannot be built (offline, with the module not in the cache).
func toxiproxyCLI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "install", "github.com/Shopify/toxiproxy/v2/cmd/cli@v2.12.0")
	cmd.Dir = dir // outside this module: the CLI builds with its own go.mod
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build toxiproxy-cli from github.com/Shopify/toxiproxy/v2@v2.12.0 (offline?): %v\n%s", err, out)
	}
	return filepath.Join(dir, "cli")
}

// toxiproxy-cli does what toxiproxy's scripts/test-e2e does, against
// netemu toxiproxy: create, list, toggle, inspect, and each toxic added,
// updated and removed, with HTTP GETs through the proxy in between (the
// script's benchmark). Every call must succeed; a toxic of no type must
// fail as toxiproxy's does.
func TestToxiproxyCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds toxiproxy-cli")
	}
	cli := toxiproxyCLI(t)
	api := toxiproxyRun(t)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/test1" {
			fmt.Fprint(w, strings.Repeat("0123456789abcdef", 4096))
			return
		}
		fmt.Fprint(w, "hello world")
	}))
	defer web.Close()
	listen := freeAddr(t)
	step := func(want string, args ...string) {
		t.Helper()
		cmd := exec.Command(cli, append([]string{"-h", "http://" + api}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("toxiproxy-cli %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("toxiproxy-cli %s printed %q; want %q in it", strings.Join(args, " "), out.String(), want)
		}
	}
	get := func() {
		t.Helper()
		for _, path := range []string{"/test1", "/test2"} {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Get("http://" + listen + path)
			if err != nil {
				t.Fatalf("GET %s through the proxy: %v", path, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || len(b) != map[string]int{"/test1": 65536, "/test2": 11}[path] {
				t.Fatalf("GET %s through the proxy: %d, %d bytes", path, resp.StatusCode, len(b))
			}
		}
	}
	webAddr := strings.TrimPrefix(web.URL, "http://")
	step("Created new proxy shopify_http", "create", "-l", listen, "-u", webAddr, "shopify_http")
	step("shopify_http\t"+listen+"\t"+webAddr+"\tenabled\t0", "list")
	step("Proxy shopify_http is now disabled", "toggle", "shopify_http")
	step("", "inspect", "shopify_http")
	step("Proxy shopify_http is now enabled", "toggle", "shopify_http")
	get()

	step("Added downstream latency toxic 'latency_downstream' on proxy 'shopify_http'", "toxic", "add", "--downstream", "--type=latency", "--toxicName=latency_downstream",
		"--attribute=latency=100", "--attribute=jitter=5", "--toxicity=0.99", "shopify_http")
	step("latency_downstream\ttype=latency\tstream=downstream\ttoxicity=0.99\tattributes=[\tjitter=5\tlatency=100\t]", "inspect", "shopify_http")
	get()
	step("Updated toxic 'latency_downstream' on proxy 'shopify_http'", "toxic", "update", "--toxicName=latency_downstream", "--attribute=jitter=20", "--toxicity=0.7", "shopify_http")
	step("toxicity=0.70\tattributes=[\tjitter=20\tlatency=100\t]", "inspect", "shopify_http")
	step("Removed toxic 'latency_downstream' on proxy 'shopify_http'", "toxic", "delete", "--toxicName=latency_downstream", "shopify_http")

	step("Added upstream latency toxic 'latency_upstream'", "toxic", "add", "--upstream", "--type=latency", "--toxicName=latency_upstream",
		"--attribute=latency=100", "--attribute=jitter=5", "--toxicity=1", "shopify_http")
	get()
	step("Updated toxic 'latency_upstream'", "toxic", "update", "--toxicName=latency_upstream", "--attribute=jitter=20", "--toxicity=0.3", "shopify_http")
	step("Removed toxic 'latency_upstream'", "toxic", "delete", "--toxicName=latency_upstream", "shopify_http")

	step("Added downstream bandwidth toxic 'bandwidth_kb_per_second'", "toxic", "add", "--type=bandwidth", "--toxicName=bandwidth_kb_per_second", "--attribute=rate=1", "--toxicity=0.5", "shopify_http")
	step("Updated toxic 'bandwidth_kb_per_second'", "toxic", "update", "--toxicName=bandwidth_kb_per_second", "--attribute=rate=1000", "--toxicity=1.0", "shopify_http")
	get()
	step("Removed toxic 'bandwidth_kb_per_second'", "toxic", "delete", "--toxicName=bandwidth_kb_per_second", "shopify_http")

	step("Added downstream timeout toxic 'timeout_ms'", "toxic", "add", "--type=timeout", "--toxicName=timeout_ms", "--attribute=timeout=10", "--toxicity=0.1", "shopify_http")
	step("Removed toxic 'timeout_ms'", "toxic", "delete", "--toxicName=timeout_ms", "shopify_http")

	step("Added downstream slicer toxic 'slicer_us'", "toxic", "add", "--type=slicer", "--toxicName=slicer_us", "--attribute=average_size=64",
		"--attribute=size_variation=32", "--attribute=delay=10", "--toxicity=1.0", "shopify_http")
	get()
	step("Removed toxic 'slicer_us'", "toxic", "delete", "--toxicName=slicer_us", "shopify_http")

	step("Added downstream reset_peer toxic 'reset_peer'", "toxic", "add", "--type=reset_peer", "--toxicName=reset_peer", "--attribute=timeout=2000", "--toxicity=1.0", "shopify_http")
	step("reset_peer\ttype=reset_peer", "inspect", "shopify_http")
	step("Removed toxic 'reset_peer'", "toxic", "delete", "--toxicName=reset_peer", "shopify_http")

	// netemu's own toxics, as toxiproxy-cli sends any toxic.
	step("Added downstream netem toxic 'shaky'", "toxic", "add", "--type=netem", "--toxicName=shaky", "--attribute=options=delay 10ms loss 1%", "shopify_http")
	get()

	cmd := exec.Command(cli, "-h", "http://"+api, "toxic", "add", "--type=nope", "shopify_http")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 || !strings.Contains(string(out), "AddToxic: HTTP 400: invalid toxic type") {
		t.Errorf("toxic add --type=nope: exit %d, %q; want 1 and toxiproxy's error", code, out)
	}
}

// curl through a proxy with 50 ms of latency each way (RTT 100 ms): its
// connect() ends at the proxy on loopback, so it takes no round trip
// (toxiproxy's too); the first byte of the response comes after 2 RTT,
// the handshake across the link and then the request (toxiproxy: 1 RTT,
// its latency added to the request's and the response's bytes); and the
// rest of a 200 KB body, which no initial window holds (10 segments,
// 14.5 KB), after one round trip more at least, slow start's (toxiproxy
// delays every chunk by the same 50 ms, so the rest follows at once).
// Bounds: the lower ones are the model's; connect is only bounded by the
// RTT, on a loaded machine.
func TestToxiproxyCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed (apt-get install curl)")
	}
	const rtt = 100 * time.Millisecond
	api := toxiproxyRun(t)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 200_000))
	}))
	defer web.Close()
	cl := tpclient.NewClient(api)
	p, err := cl.CreateProxy("web", "127.0.0.1:0", strings.TrimPrefix(web.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{"upstream", "downstream"} {
		if _, err := p.AddToxic("", "latency", stream, 1, tpclient.Attributes{"latency": rtt.Milliseconds() / 2}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(curl, "-s", "-o", "/dev/null", "-w", "%{time_connect} %{time_starttransfer} %{time_total} %{size_download}", "http://"+p.Listen+"/").Output()
	if err != nil {
		t.Fatalf("curl: %v", err)
	}
	f := strings.Fields(string(out))
	sec := func(s string) time.Duration {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("curl printed %q", out)
		}
		return time.Duration(v * float64(time.Second))
	}
	connect, first, total := sec(f[0]), sec(f[1]), sec(f[2])
	t.Logf("curl: connect %v, first byte %v, total %v, %s bytes", connect, first, total, f[3])
	if f[3] != "200000" {
		t.Errorf("curl got %s bytes; want 200000", f[3])
	}
	if connect >= rtt {
		t.Errorf("connect took %v; the client's connect ends at the proxy, on loopback: want less than the RTT", connect)
	}
	if first < 2*rtt || first > 2*rtt+5*time.Second {
		t.Errorf("first byte after %v; want 2 RTT at least (the handshake across the link, then the request)", first)
	}
	if total-first < rtt {
		t.Errorf("the body took %v after its first byte; want a round trip at least (slow start: 200 KB is more than an initial window)", total-first)
	}
}

// A --config file whose proxies make a loop is refused in one line.
func TestToxiproxyConfigLoop(t *testing.T) {
	a := freeAddr(t)
	file := filepath.Join(t.TempDir(), "proxies.json")
	if err := os.WriteFile(file, []byte(`[{"name":"self","listen":"`+a+`","upstream":"`+a+`"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runNetemu("toxiproxy", "--listen", freeAddr(t), "--config", file)
	want := "proxy self's upstream " + a + " is its own listen address: a loop"
	if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
		t.Errorf("a looping --config: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", code, out, errOut, want)
	}
	if c, err := net.Dial("tcp4", a); err == nil {
		c.Close()
		t.Errorf("%s accepts after the refusal", a)
	}
}
