//go:build unix

package realclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"html"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Chromium returns the path of a Chromium or Chrome binary, or skips the
// test.
func Chromium(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	tb.Skip("Chromium is not installed (apt-get install chromium; .ci/run installs it)")
	return ""
}

// Timing is what a page's Navigation and Resource Timing said, in
// milliseconds from the navigation's start.
type Timing struct {
	// Load is when the load event fired: every resource is in.
	Load float64 `json:"load"`
	// The document's own fetch: its connection (a proxy's handshake
	// included), its request and its response.
	FetchStart    float64 `json:"fetchStart"`
	ConnectEnd    float64 `json:"connectEnd"`
	RequestStart  float64 `json:"requestStart"`
	ResponseStart float64 `json:"responseStart"`
	ResponseEnd   float64 `json:"responseEnd"`
	// Resources are the page's subresources, in the order the browser
	// found them.
	Resources []ResourceTiming `json:"resources"`
}

// ResourceTiming is one subresource's PerformanceResourceTiming: when it
// was found (Start), its connection's opening (equal to Start for a
// connection kept alive), its request and its response.
type ResourceTiming struct {
	Start         float64 `json:"startTime"`
	ConnectStart  float64 `json:"connectStart"`
	ConnectEnd    float64 `json:"connectEnd"`
	RequestStart  float64 `json:"requestStart"`
	ResponseStart float64 `json:"responseStart"`
	ResponseEnd   float64 `json:"responseEnd"`
}

// FirstStart is when the browser asked for its first subresource.
func (t Timing) FirstStart() float64 {
	first := t.Load
	for _, r := range t.Resources {
		first = min(first, r.Start)
	}
	return first
}

// timingAttr is the attribute of <body> in which TimingScript leaves the
// timings, as JSON.
const timingAttr = "data-netemu-timing"

// TimingScript is a <script> element for a test page: at the load event
// it writes the page's timings into the DOM, where LoadPage reads them.
const TimingScript = `<script>
addEventListener("load", () => {
	const nav = performance.getEntriesByType("navigation")[0];
	const pick = (e, keys) => Object.fromEntries(keys.map(k => [k, e[k]]));
	const keys = ["startTime", "connectStart", "connectEnd", "requestStart", "responseStart", "responseEnd"];
	document.body.setAttribute("` + timingAttr + `", JSON.stringify({
		load: performance.now(),
		...pick(nav, ["fetchStart", "connectEnd", "requestStart", "responseStart", "responseEnd"]),
		resources: performance.getEntriesByType("resource").map(e => pick(e, keys)),
	}));
});
</script>`

var timingRE = regexp.MustCompile(timingAttr + `="([^"]*)"`)

// LoadPage loads url in headless Chromium, a new profile each time, and
// returns the timings TimingScript recorded; the page must include it.
// pac is a proxy auto-config script (FindProxyForURL) that decides
// where each request goes; "" means straight to the server.
//
// Chromium runs as its tests and CI do: no sandbox (it refuses to run as
// root with one), no GPU, no QUIC, and none of its own background
// traffic (updates, sync, time queries), which a PAC script should send
// to a closed port anyway so that nothing but the page crosses a link
// under test.
func LoadPage(tb testing.TB, url, pac string) Timing {
	tb.Helper()
	args := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--no-default-browser-check", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-extensions", "--disable-default-apps",
		"--user-data-dir=" + tb.TempDir()}
	if pac != "" {
		args = append(args, "--proxy-pac-url=data:application/x-ns-proxy-autoconfig;base64,"+
			base64.StdEncoding.EncodeToString([]byte(pac)))
	}
	args = append(args, "--dump-dom", url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Chromium(tb), args...)
	// Chromium's helpers (zygote, renderer, network service) are in its
	// process group, which a timeout ends whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A helper that outlives Chromium with its output open would hold
	// Output up: the group is killed and the pipes given up after 5 s.
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("chromium --dump-dom %s: %v; its last words: %s", url, err, tail(stderr.String(), 500))
	}
	m := timingRE.FindSubmatch(out)
	if m == nil {
		tb.Fatalf("chromium loaded %s but the page recorded no timings (does it include TimingScript?): %s", url, tail(string(out), 500))
	}
	var t Timing
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &t); err != nil {
		tb.Fatalf("the timings of %s: %v", url, err)
	}
	return t
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
