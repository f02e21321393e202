package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// children lists the processes whose parent is pid, from /proc.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// A sweep killed outright (SIGKILL: no chance to clean up) takes its
// workers with it, in the middle of their runs, instead of leaving them
// to measure what nobody reads.
func TestWorkersDieWithTheirSweep(t *testing.T) {
	// Each run takes well over a minute of CPU: a worker that outlived
	// its sweep would still be running at the end of the wait below.
	cmd := exec.Command(os.Args[0], "sweep", "bulk", "--size", "5GB", "--rate", "1gbit", "--rtt", "10ms", "--seeds", "1-2", "--jobs", "2")
	cmd.Env = append(os.Environ(), testAsNetemuEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var workers []int
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		for _, w := range workers {
			if alive(w) {
				syscall.Kill(w, syscall.SIGKILL) // ours: started by the sweep we started
			}
		}
	})
	for deadline := time.Now().Add(30 * time.Second); len(workers) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers after 30 s; want 2", len(workers))
		}
		workers = children(cmd.Process.Pid)
	}
	time.Sleep(200 * time.Millisecond) // the workers have their units
	cmd.Process.Kill()
	cmd.Wait()
	for _, w := range workers {
		deadline := time.Now().Add(10 * time.Second)
		for alive(w) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(w) {
			t.Errorf("worker %d still runs 10 s after its sweep was killed", w)
		}
	}
}
