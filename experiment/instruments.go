package experiment

import (
	"bufio"
	"context"
	"fmt"
	"os"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/explain"
	"github.com/netemu/netemu/report/mmlog"
	"github.com/netemu/netemu/report/pcap"
	"github.com/netemu/netemu/report/timeline"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/workloads"
)

// Instruments say what to watch in a run. The zero value watches only the
// totals that go into the record (retransmits, largest window, SRTT).
type Instruments struct {
	Pcap     string // write every packet delivered across the link to this pcap file
	Timeline string // write TCP state and queue occupancy to this CSV file
	// KeepTimeline keeps the timeline in memory, for a figure; the file
	// is written as the run goes.
	KeepTimeline bool
	// Explain folds the link's events and the TCPs' samples into an
	// explain.Analyzer.
	Explain bool
	// MMLogUp and MMLogDown write the client→server and server→client
	// directions as mahimahi's mm-link logs them (report/mmlog); Command
	// is the command line their headers name.
	MMLogUp, MMLogDown string
	Command            string
}

// OutputError is an output file of an instrument that could not be
// created.
type OutputError struct {
	Instrument string // "pcap", "timeline", "mm-log-up" or "mm-log-down"
	Err        error
}

func (e *OutputError) Error() string { return e.Instrument + ": " + e.Err.Error() }
func (e *OutputError) Unwrap() error { return e.Err }

// Watch is the instruments attached to one run. Its files are open
// from Attach to Finish.
type Watch struct {
	pcapFile     *os.File
	pcapBuf      *bufio.Writer
	pcap         *pcap.Writer
	timelineFile *os.File
	timelineBuf  *bufio.Writer
	timelineCSV  *timeline.CSV
	timeline     *timeline.Timeline
	analyzer     *explain.Analyzer
	mmFiles      []*os.File
	mmLogs       []*mmlog.Writer
	tally        explain.Tally
	finished     bool  // Finish ran
	finishErr    error // and returned this
}

// Attach readies the instruments on case c and wires them into its
// Observe and Probe. Files are created now, so that a bad path fails
// before the run; Finish completes and closes them.
func (in Instruments) Attach(c *Case) (_ *Watch, err error) {
	w := &Watch{}
	defer func() {
		if err != nil {
			w.close() // the files made before the one that failed
		}
	}()
	observers := []link.Observer{w.tally.Observe}
	probes := []func(tcpstack.Sample){w.tally.TCP}
	if in.Pcap != "" {
		if w.pcapFile, err = os.Create(in.Pcap); err != nil {
			return nil, &OutputError{"pcap", err}
		}
		w.pcapBuf = bufio.NewWriterSize(w.pcapFile, 1<<16)
		if w.pcap, err = pcap.NewWriter(w.pcapBuf); err != nil {
			return nil, err
		}
	}
	if in.Timeline != "" {
		if w.timelineFile, err = os.Create(in.Timeline); err != nil {
			return nil, &OutputError{"timeline", err}
		}
		w.timelineBuf = bufio.NewWriterSize(w.timelineFile, 1<<16)
		w.timelineCSV = timeline.NewCSV(w.timelineBuf)
		w.timelineCSV.Traces(c.Link.Trace, c.down().Trace)
		observers = append(observers, w.timelineCSV.Observe)
		probes = append(probes, w.timelineCSV.TCP)
	}
	if in.KeepTimeline {
		w.timeline = &timeline.Timeline{}
		observers = append(observers, w.timeline.Observe)
		probes = append(probes, w.timeline.TCP)
	}
	if in.Explain {
		w.analyzer = &explain.Analyzer{}
		observers = append(observers, w.analyzer.Observe)
		probes = append(probes, w.analyzer.TCP)
	}
	for _, f := range []struct {
		path, name, instrument string
		dir                    link.Dir
	}{{in.MMLogUp, "Uplink", "mm-log-up", link.AtoB}, {in.MMLogDown, "Downlink", "mm-log-down", link.BtoA}} {
		if f.path == "" {
			continue
		}
		file, err := os.Create(f.path)
		if err != nil {
			return nil, &OutputError{f.instrument, err}
		}
		w.mmFiles = append(w.mmFiles, file)
		m := mmlog.New(file, f.dir, c.Link, f.name, in.Command)
		w.mmLogs = append(w.mmLogs, m)
		observers = append(observers, m.Observe)
	}
	pw := w.pcap
	c.Observe = func(e link.Event) {
		if pw != nil && e.Kind == link.EventDeliver {
			pw.Packet(e.Time, e.Packet)
		}
		for _, f := range observers {
			f(e)
		}
	}
	c.Probe = func(s tcpstack.Sample) {
		for _, f := range probes {
			f(s)
		}
	}
	return w, nil
}

// Timeline returns what the timeline collected; nil unless asked for.
func (w *Watch) Timeline() *timeline.Timeline { return w.timeline }

// Analyzer returns the explain analysis; nil unless asked for.
func (w *Watch) Analyzer() *explain.Analyzer { return w.analyzer }

// Finish writes what the instruments collected and closes their files.
// Later calls do nothing and return the first call's error, so that a
// deferred Finish can back an explicit one.
func (w *Watch) Finish() error {
	if w.finished {
		return w.finishErr
	}
	w.finished = true
	w.finishErr = w.finish()
	return w.finishErr
}

func (w *Watch) finish() error {
	var err error
	if w.pcap != nil {
		err = w.pcap.Err()
		if ferr := w.pcapBuf.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("pcap: %w", ferr)
		}
	}
	if w.timelineCSV != nil {
		terr := w.timelineCSV.Close()
		if ferr := w.timelineBuf.Flush(); terr == nil && ferr != nil {
			terr = fmt.Errorf("timeline: %w", ferr)
		}
		if err == nil {
			err = terr
		}
	}
	for _, m := range w.mmLogs {
		if merr := m.Close(); err == nil && merr != nil {
			err = fmt.Errorf("mm-log: %w", merr)
		}
	}
	if cerr := w.close(); err == nil {
		err = cerr
	}
	return err
}

// close closes the instruments' files.
func (w *Watch) close() error {
	var err error
	for _, f := range append([]*os.File{w.pcapFile, w.timelineFile}, w.mmFiles...) {
		if f != nil {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	w.pcapFile, w.timelineFile, w.mmFiles = nil, nil, nil
	return err
}

// Summarize adds the totals the instruments counted to rec:
// retransmissions (from the link's events) and, where the TCP state was
// sampled (the emulated hosts), the largest congestion window and the
// sender's last smoothed RTT.
func (w *Watch) Summarize(rec *Record) {
	retransmits, cwnd, srtt := w.tally.Totals()
	rec.Retransmits = ptr(retransmits)
	if cwnd > 0 {
		rec.MaxCwndBytes = ptr(cwnd)
		rec.SRTTms = ptr(Ms(srtt))
	}
}

// Measure runs c on b watched by in: it attaches the instruments, runs,
// finishes their files and adds their totals to the record.
func Measure(ctx context.Context, b Backend, c Case, in Instruments) (workloads.Result, Record, *Watch, error) {
	w, err := in.Attach(&c)
	if err != nil {
		return workloads.Result{}, Record{}, nil, err
	}
	r, rec, err := b.Run(ctx, c)
	if ferr := w.Finish(); err == nil {
		err = ferr
	}
	if err != nil {
		return workloads.Result{}, Record{}, nil, err
	}
	w.Summarize(&rec)
	return r, rec, w, nil
}
