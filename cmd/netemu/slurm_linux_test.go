//go:build linux

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A one-node SLURM cluster on this machine runs studies through
// deploy/slurm/submit, as a user would: munged, slurmctld and slurmd,
// with a configuration written to a temporary directory and ports of
// their own on the loopback address.

// slurmBound bounds the whole test: the cluster's start, four
// submissions' jobs and SLURM's scheduling, a few seconds a step (about
// 30 s in all on an idle machine).
const slurmBound = 3 * time.Minute

// A slurmCluster is the daemons a test started and their files.
type slurmCluster struct {
	dir     string   // configuration, state, logs, munge's key and socket
	conf    string   // slurm.conf
	env     []string // the environment of SLURM's commands: SLURM_CONF
	daemons []slurmDaemon
}

// A slurmDaemon is a process the test started; done is closed when it has
// exited.
type slurmDaemon struct {
	name string
	done chan struct{}
}

// alive fails the test, with the logs, if a daemon has exited.
func (c *slurmCluster) alive(t *testing.T) {
	t.Helper()
	for _, d := range c.daemons {
		select {
		case <-d.done:
			t.Fatalf("%s exited\n%s", d.name, c.logs())
		default:
		}
	}
}

// startSLURM starts a one-node cluster and registers its end: each daemon
// it started is killed by its PID, the job processes with slurmd (which
// is the first process of a PID namespace of its own, so that nothing it
// started outlives it), and the directory is removed. It skips where
// SLURM cannot start: not root, not installed, no PID namespaces.
func startSLURM(t *testing.T, ctx context.Context) *slurmCluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SLURM's slurmd runs jobs as their users and needs root; run the tests as root")
	}
	bin := map[string]string{}
	for _, p := range []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo", "unshare"} {
		path, err := exec.LookPath(p)
		if err != nil { // the daemons are in /usr/sbin, which a PATH may lack
			path, err = exec.LookPath(filepath.Join("/usr/sbin", p))
		}
		if err != nil {
			t.Skipf("%s is not installed: apt-get install slurm-wlm munge (.ci/run does)", p)
		}
		bin[p] = path
	}
	if out, err := exec.CommandContext(ctx, bin["unshare"], "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("slurmd runs in a PID namespace of its own, and this machine makes none: unshare: %v %s", err, out)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".") // SLURM names hosts by their short names
	c := &slurmCluster{dir: t.TempDir()}
	c.conf = filepath.Join(c.dir, "slurm.conf")
	c.env = append(os.Environ(), "SLURM_CONF="+c.conf)
	for _, d := range []string{"munge", "state", "spool"} {
		if err := os.Mkdir(filepath.Join(c.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(c.dir, "munge", "key"), key, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.conf, []byte(c.config(host, slurmPort(t), slurmPort(t), slurmCPUs(bin["slurmd"]))), 0o644); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(c.dir, "munge")
	c.start(t, "munged", syscall.SIGTERM, bin["munged"], "--foreground", "--force", "--key-file="+filepath.Join(m, "key"), "--socket="+filepath.Join(m, "socket"),
		"--pid-file="+filepath.Join(m, "pid"), "--log-file="+filepath.Join(m, "log"), "--seed-file="+filepath.Join(m, "seed"))
	c.waitFile(t, ctx, filepath.Join(m, "socket"), "munged")
	c.start(t, "slurmctld", syscall.SIGTERM, bin["slurmctld"], "-D", "-f", c.conf)
	// --kill-child: slurmd dies with unshare, and the namespace's
	// processes, the jobs' among them, die with slurmd. unshare waits for
	// its child through SIGTERM: SIGKILL ends it.
	c.start(t, "slurmd", syscall.SIGKILL, bin["unshare"], "--pid", "--fork", "--mount-proc", "--kill-child", bin["slurmd"], "-D", "-f", c.conf)
	for {
		out, _ := c.command(ctx, "sinfo", "-h", "-o", "%T").Output()
		if strings.TrimSpace(string(out)) == "idle" {
			return c
		}
		c.alive(t)
		if ctx.Err() != nil {
			t.Fatalf("the node is not idle (%q) after %v\n%s", out, slurmBound, c.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// config is slurm.conf for one node, host, on the loopback address: no
// cgroups (proctrack/linuxproc, task/none), no accounting database.
func (c *slurmCluster) config(host string, ctldPort, slurmdPort, cpus int) string {
	return fmt.Sprintf(`ClusterName=netemutest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[3]d
SlurmdPort=%[4]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[2]s/munge/socket
CredType=cred/munge
StateSaveLocation=%[2]s/state
SlurmdSpoolDir=%[2]s/spool
SlurmctldPidFile=%[2]s/slurmctld.pid
SlurmdPidFile=%[2]s/slurmd.pid
SlurmctldLogFile=%[2]s/slurmctld.log
SlurmdLogFile=%[2]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=5
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=%[5]d State=UNKNOWN
PartitionName=netemu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, host, c.dir, ctldPort, slurmdPort, cpus)
}

// slurmCPUs is the CPUs slurmd finds on this machine (slurmd -C), which
// the node's configuration must not exceed.
func slurmCPUs(slurmd string) int {
	out, _ := exec.Command(slurmd, "-C").Output()
	var n int
	if m := regexp.MustCompile(`\bCPUs=(\d+)`).FindSubmatch(out); m != nil {
		fmt.Sscan(string(m[1]), &n)
	}
	return max(n, 1)
}

// slurmPort is a TCP port free on the loopback address a moment ago.
func slurmPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start starts a daemon in the foreground, its output in dir/name.out,
// and registers its end: stop, then SIGKILL if it lingers, by its PID.
// It dies with the test's process too (Pdeathsig).
func (c *slurmCluster) start(t *testing.T, name string, stop syscall.Signal, args ...string) {
	t.Helper()
	out, err := os.Create(filepath.Join(c.dir, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env, cmd.Stdout, cmd.Stderr = c.env, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("%s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); out.Close(); close(done) }()
	c.daemons = append(c.daemons, slurmDaemon{name, done})
	t.Cleanup(func() {
		cmd.Process.Signal(stop)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
}

// waitFile waits for the file a daemon makes when it is ready.
func (c *slurmCluster) waitFile(t *testing.T, ctx context.Context, path, daemon string) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		c.alive(t)
		if ctx.Err() != nil {
			t.Fatalf("%s did not start\n%s", daemon, c.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// command is a SLURM command of the cluster.
func (c *slurmCluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.env
	return cmd
}

// logs is the end of the daemons' logs, for a failure's message.
func (c *slurmCluster) logs() string {
	var b strings.Builder
	for _, f := range []string{"munged.out", "slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"} {
		data, _ := os.ReadFile(filepath.Join(c.dir, f))
		fmt.Fprintf(&b, "--- %s:\n%s\n", f, slurmTail(string(data), 15))
	}
	return b.String()
}

// slurmTail is the last n lines of s.
func slurmTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// A slurmStudy is a study submitted with deploy/slurm/submit.
type slurmStudy struct {
	c            *slurmCluster
	dir          string
	array, merge string // the jobs of the last submission
}

// submit runs deploy/slurm/submit with args, with netemu as NETEMU, from
// dir, and returns the study in dir/study. A test that ends before the
// study's jobs do cancels them, before its files are removed.
func (c *slurmCluster) submit(t *testing.T, ctx context.Context, dir, netemu string, args ...string) *slurmStudy {
	t.Helper()
	s := &slurmStudy{c: c, dir: filepath.Join(dir, "study")}
	s.run(t, ctx, dir, netemu, append([]string{"study"}, args...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		jobs := s.array + "," + s.merge
		for {
			out, err := c.command(ctx, "squeue", "-h", "-o", "%i", "-j", jobs).Output()
			if err != nil || len(bytes.TrimSpace(out)) == 0 {
				return
			}
			c.command(ctx, "scancel", s.array, s.merge).Run()
			time.Sleep(200 * time.Millisecond)
		}
	})
	return s
}

// resume runs deploy/slurm/submit --resume on the study.
func (s *slurmStudy) resume(t *testing.T, ctx context.Context) {
	t.Helper()
	s.run(t, ctx, filepath.Dir(s.dir), "", "--resume", s.dir)
}

var slurmSubmitted = regexp.MustCompile(`(?m)^netemu-slurm: array job (\d+) runs .*\nnetemu-slurm: merge job (\d+) runs when they end`)

func (s *slurmStudy) run(t *testing.T, ctx context.Context, dir, netemu string, args ...string) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "deploy", "slurm", "submit"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := s.c.command(ctx, script, args...)
	cmd.Dir = dir
	if netemu != "" {
		cmd.Env = append(cmd.Env, "NETEMU="+netemu)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	m := slurmSubmitted.FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("submit %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	s.array, s.merge = string(m[1]), string(m[2])
}

// wait waits for the jobs of the last submission to end and returns the
// merge job's state (COMPLETED, FAILED, …).
func (s *slurmStudy) wait(t *testing.T, ctx context.Context) string {
	t.Helper()
	for {
		out, err := s.c.command(ctx, "squeue", "-h", "-o", "%i %T", "-j", s.array+","+s.merge).Output()
		if err == nil && len(bytes.TrimSpace(out)) == 0 {
			break
		}
		s.c.alive(t)
		if ctx.Err() != nil {
			t.Fatalf("jobs %s and %s still queued or running after %v: %s\n%s", s.array, s.merge, slurmBound, out, s.c.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, err := s.c.command(ctx, "scontrol", "-o", "show", "job", s.merge).Output()
	m := regexp.MustCompile(`\bJobState=(\S+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("scontrol show job %s: %v %s", s.merge, err, out)
	}
	return string(m[1])
}

// file is a file of the study's directory.
func (s *slurmStudy) file(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lastMerge is what the merge job of the last submission wrote (its log
// holds every submission's).
func (s *slurmStudy) lastMerge(t *testing.T) string {
	t.Helper()
	log := string(s.file(t, "merge.log"))
	head := "netemu-slurm: merge job " + s.merge + ","
	i := strings.LastIndex(log, head)
	if i < 0 {
		t.Fatalf("merge.log has nothing of merge job %s:\n%s", s.merge, log)
	}
	return log[i:]
}

// A study submitted as a job array of 3 tasks and a merge job merges to
// the bytes the same sweep prints run on one machine, table and JSON;
// each task took its shard from SLURM's environment. Then a task
// cancelled in the middle of its runs, and one that fails, are reported
// by the merge job with their number and log, and --resume finishes the
// study without measuring again a run that had finished.
func TestSLURMStudy(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a SLURM cluster and runs two studies on it, half a minute of waiting")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), slurmBound)
	defer cancel()
	c := startSLURM(t, ctx)
	bin := netemuBin(t)

	t.Run("merged", func(t *testing.T) {
		// 8 cells × 4 seeds on the virtual clock, a blink each.
		study := []string{"bulk", "--size", "50KB", "--rtt", "10ms,50ms", "--rate", "10mbit,5mbit", "--loss", "0,2%", "--seeds", "1-4"}
		s := c.submit(t, ctx, t.TempDir(), bin, append([]string{"3", "--"}, study...)...)
		if state := s.wait(t, ctx); state != "COMPLETED" {
			t.Fatalf("merge job %s: %s\n%s", s.merge, state, s.lastMerge(t))
		}
		for i := range 3 {
			log := s.file(t, "logs/task-"+itoa(i)+".log")
			if want := fmt.Sprintf("netemu: shard %d/3, from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT\n", i); !bytes.Contains(log, []byte(want)) {
				t.Errorf("task %d's log does not say %q:\n%s", i, want, log)
			}
		}
		for _, out := range []struct {
			file  string
			extra []string
		}{{"results.txt", nil}, {"results.jsonl", []string{"--json"}}} {
			code, want, errOut := runBin(t, append(append([]string{"sweep"}, study...), out.extra...)...)
			if code != 0 {
				t.Fatalf("the local sweep: exit %d: %s", code, errOut)
			}
			if got := s.file(t, out.file); string(got) != want {
				t.Errorf("%s, merged on SLURM:\n%s\nthe sweep run here:\n%s", out.file, got, want)
			}
		}
		if report := s.lastMerge(t); !strings.HasSuffix(report, "netemu-slurm: merged 3 parts into "+s.dir+"/results.txt and "+s.dir+"/results.jsonl\n") {
			t.Errorf("the merge job's log:\n%s", report)
		}
	})

	t.Run("resumed", func(t *testing.T) {
		// 2 cells × 10 seeds on the real clock, 0.4 s a run: task 1 is
		// cancelled seconds before it would end, and a run measured again
		// would not have the bytes of the first.
		s := c.submit(t, ctx, t.TempDir(), bin, "2", "--", "bulk", "--clock", "real", "--size", "50KB", "--rtt", "100ms", "--rate", "10mbit,5mbit", "--seeds", "1-10")
		part1 := filepath.Join(s.dir, "part-1.jsonl")
		for {
			if b, _ := os.ReadFile(part1); bytes.Count(b, []byte("\n")) >= 1+3 {
				break
			}
			c.alive(t)
			if ctx.Err() != nil {
				t.Fatalf("task 1 wrote no 3 runs in %v\n%s", slurmBound, c.logs())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if out, err := c.command(ctx, "scancel", s.array+"_1").CombinedOutput(); err != nil {
			t.Fatalf("scancel %s_1: %v %s", s.array, err, out)
		}
		if state := s.wait(t, ctx); state != "FAILED" {
			t.Errorf("merge job %s after a task was cancelled: %s; want FAILED", s.merge, state)
		}
		cancelled := s.file(t, "part-1.jsonl")
		kept := cancelled[:bytes.LastIndexByte(cancelled, '\n')+1] // its complete lines
		if n := bytes.Count(kept, []byte("\n")); n >= 11 {
			t.Fatalf("task 1 finished its 10 runs before scancel took effect; the test needs it cancelled in the middle")
		}
		part0 := s.file(t, "part-0.jsonl")
		report := s.lastMerge(t)
		for _, want := range []string{
			"netemu-slurm: task 1 ended without an exit status: cancelled, killed, out of time or its node failed; the end of its log " + s.dir + "/logs/task-1.log:\n",
			"CANCELLED AT",
			"part-1.jsonl holds " + itoa(bytes.Count(kept, []byte("\n"))-1) + " of shard 1/2's 10 runs: the shard did not finish",
			"unfinished tasks: 1;",
		} {
			if !strings.Contains(report, want) {
				t.Errorf("the merge job's report does not say %q:\n%s", want, report)
			}
		}
		if strings.Contains(report, "task 0 ") {
			t.Errorf("the merge job reports task 0, which finished:\n%s", report)
		}
		if _, err := os.Stat(filepath.Join(s.dir, "results.txt")); err == nil {
			t.Errorf("results.txt written with a part unfinished")
		}

		// A task that fails: its part damaged, which netemu refuses.
		if err := os.WriteFile(part1, append(append([]byte{}, cancelled...), "damaged\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		s.resume(t, ctx)
		if state := s.wait(t, ctx); state != "FAILED" {
			t.Errorf("merge job %s after a task failed: %s; want FAILED", s.merge, state)
		}
		report = s.lastMerge(t)
		for _, want := range []string{
			"netemu-slurm: task 1 failed: exit status 2; the end of its log " + s.dir + "/logs/task-1.log:\n",
			"part-1.jsonl:" + itoa(bytes.Count(kept, []byte("\n"))+1) + ": damaged",
		} {
			if !strings.Contains(report, want) {
				t.Errorf("the merge job's report does not say %q:\n%s", want, report)
			}
		}

		// Repaired, the study ends: the runs task 1 had finished are
		// kept as they were, and task 0's part is untouched.
		if err := os.WriteFile(part1, cancelled, 0o644); err != nil {
			t.Fatal(err)
		}
		s.resume(t, ctx)
		if state := s.wait(t, ctx); state != "COMPLETED" {
			t.Fatalf("merge job %s after --resume: %s\n%s", s.merge, state, s.lastMerge(t))
		}
		if got := s.file(t, "part-1.jsonl"); !bytes.HasPrefix(got, kept) || bytes.Count(got, []byte("\n")) != 11 {
			t.Errorf("part-1.jsonl after --resume: %d lines, the %d before the cancel kept: %v; want 11 lines beginning with those",
				bytes.Count(got, []byte("\n")), bytes.Count(kept, []byte("\n")), bytes.HasPrefix(got, kept))
		}
		if got := s.file(t, "part-0.jsonl"); !bytes.Equal(got, part0) {
			t.Errorf("part-0.jsonl changed by --resume, though its task had finished")
		}
		if report := s.lastMerge(t); !strings.Contains(report, "netemu-slurm: merged 2 parts into") {
			t.Errorf("the merge job's log:\n%s", report)
		}
		if n := bytes.Count(s.file(t, "results.jsonl"), []byte("\n")); n != 2*(10+1) {
			t.Errorf("results.jsonl: %d records; want 2 cells × (10 runs + a summary)", n)
		}
	})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("the test took more than %v", slurmBound)
	}
}
