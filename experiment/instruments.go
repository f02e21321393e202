package experiment

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/netemu/netemu/link"
	"github.com/netemu/netemu/report/explain"
	"github.com/netemu/netemu/report/mmlog"
	"github.com/netemu/netemu/report/pcap"
	"github.com/netemu/netemu/report/timeline"
	"github.com/netemu/netemu/tcpstack"
	"github.com/netemu/netemu/topo"
	"github.com/netemu/netemu/workloads"
)

// Instruments say what to watch in a run. The zero value watches only the
// totals that go into the record (retransmits, largest window, SRTT).
type Instruments struct {
	// Pcap writes the link's packets to this file. A name ending in
	// .pcapng gets a pcapng file of both ends of the link and what it
	// dropped (LinkCapture); any other name, a classic pcap file of every
	// packet delivered across the link.
	Pcap     string
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

// A WriteError is instruments' files whose writing failed (a full disk,
// say): Finish removed them, and the run's other files are complete.
type WriteError struct {
	Instruments []string // "pcap", "timeline", "mm-log-up" or "mm-log-down", each failed
	Err         error    // the first failure, naming its instrument
}

func (e *WriteError) Error() string { return e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// Failed reports whether instrument's file is one that failed.
func (e *WriteError) Failed(instrument string) bool {
	return slices.Contains(e.Instruments, instrument)
}

// An output is an instrument's file, open from Attach to Finish.
type output struct {
	instrument string
	f          *os.File
}

// createOutput creates path, the file of instrument.
func createOutput(instrument, path string) (*output, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, &OutputError{instrument, err}
	}
	return &output{instrument, f}, nil
}

// end closes the file after its writer ended with err, and removes it if
// either failed: a file that failed to be written is not left behind,
// short or empty. Only a regular file still at its path is removed,
// never a device or a pipe the path named (--pcap /dev/stdout). It
// returns the failure, prefixed with the instrument.
func (o *output) end(err error) error {
	st, serr := o.f.Stat()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		return nil
	}
	if now, nerr := os.Stat(o.f.Name()); serr == nil && nerr == nil && st.Mode().IsRegular() && os.SameFile(st, now) {
		os.Remove(o.f.Name())
	}
	return fmt.Errorf("%s: %w", o.instrument, err)
}

// Watch is the instruments attached to one run. Its files are open
// from Attach to Finish.
type Watch struct {
	pcapFile     *output
	pcapBuf      *bufio.Writer
	pcap         *pcap.Writer   // a classic pcap file, or
	pcapng       *pcap.NgWriter // a pcapng file
	timelineFile *output
	timelineBuf  *bufio.Writer
	timelineCSV  *timeline.CSV
	timeline     *timeline.Timeline
	analyzer     *explain.Analyzer
	mmFiles      []*output
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
			w.discard() // the files made before the one that failed
		}
	}()
	observers := []link.Observer{w.tally.Observe}
	probes := []func(tcpstack.Sample){w.tally.TCP}
	// perLink are the observers made for each link of a shape.
	var perLink []func(i int, l topo.Link) link.Observer
	if in.Pcap != "" {
		if w.pcapFile, err = createOutput("pcap", in.Pcap); err != nil {
			return nil, err
		}
		w.pcapBuf = bufio.NewWriterSize(w.pcapFile.f, 1<<16)
		if isPcapng(in.Pcap) {
			if w.pcapng, err = pcap.NewNgWriter(w.pcapBuf, "netemu"); err != nil {
				return nil, err
			}
			if c.Shape != nil {
				// Every link of the shape, both its ends and its drops,
				// each link's interfaces named by the link.
				ng := w.pcapng
				perLink = append(perLink, func(_ int, l topo.Link) link.Observer {
					return NewLinkCapture(ng, CaptureLink{Name: l.Label(), A: l.A, B: l.B}).Observe
				})
			} else {
				observers = append(observers, NewLinkCapture(w.pcapng, caseLink(c)).Observe)
			}
		} else if w.pcap, err = pcap.NewWriter(w.pcapBuf); err != nil {
			return nil, err
		}
	}
	if in.Timeline != "" {
		if w.timelineFile, err = createOutput("timeline", in.Timeline); err != nil {
			return nil, err
		}
		w.timelineBuf = bufio.NewWriterSize(w.timelineFile.f, 1<<16)
		w.timelineCSV = timeline.NewCSV(w.timelineBuf)
		w.timelineCSV.Traces(c.Link.Trace, c.down().Trace)
		if c.Shape != nil {
			// Every link's queue, each named by the link.
			tl := w.timelineCSV
			perLink = append(perLink, func(_ int, l topo.Link) link.Observer { return tl.Link(l.Label(), l.A, l.B) })
		} else {
			observers = append(observers, w.timelineCSV.Observe)
		}
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
		file, err := createOutput(f.instrument, f.path)
		if err != nil {
			return nil, err
		}
		w.mmFiles = append(w.mmFiles, file)
		m := mmlog.New(file.f, f.dir, c.Link, f.name, in.Command)
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
	if len(perLink) > 0 {
		c.ObserveLink = func(i int, l topo.Link) link.Observer {
			var obs []link.Observer
			for _, f := range perLink {
				obs = append(obs, f(i, l))
			}
			return func(e link.Event) {
				for _, f := range obs {
					f(e)
				}
			}
		}
	}
	return w, nil
}

// Timeline returns what the timeline collected; nil unless asked for.
func (w *Watch) Timeline() *timeline.Timeline { return w.timeline }

// Analyzer returns the explain analysis; nil unless asked for.
func (w *Watch) Analyzer() *explain.Analyzer { return w.analyzer }

// Finish writes what the instruments collected and closes their files.
// A file whose writing failed is removed, and the error is a
// *WriteError naming each such file's instrument. Later calls do nothing and return the first call's error, so that a
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
	var werr *WriteError
	end := func(o *output, err error) {
		if err = o.end(err); err != nil {
			if werr == nil {
				werr = &WriteError{Err: err}
			}
			werr.Instruments = append(werr.Instruments, o.instrument)
		}
	}
	// The buffer's error first: it is the file's, where the writer on
	// top words the same error as its own (pcap: write: ...).
	if w.pcapFile != nil {
		err := w.pcapBuf.Flush()
		if perr := w.pcapErr(); err == nil {
			err = perr
		}
		end(w.pcapFile, err)
	}
	if w.timelineCSV != nil {
		cerr := w.timelineCSV.Close()
		err := w.timelineBuf.Flush()
		if err == nil {
			err = cerr
		}
		end(w.timelineFile, err)
	}
	for i, m := range w.mmLogs {
		end(w.mmFiles[i], m.Close())
	}
	w.pcapFile, w.timelineFile, w.mmFiles = nil, nil, nil
	if werr != nil {
		return werr
	}
	return nil
}

// pcapErr is the first error of the pcap or pcapng writer.
func (w *Watch) pcapErr() error {
	if w.pcapng != nil {
		return w.pcapng.Err()
	}
	if w.pcap != nil {
		return w.pcap.Err()
	}
	return nil
}

// discard closes and removes the files Attach made, when it fails.
func (w *Watch) discard() {
	for _, o := range append([]*output{w.pcapFile, w.timelineFile}, w.mmFiles...) {
		if o != nil {
			o.end(errors.New("discarded"))
		}
	}
	w.pcapFile, w.timelineFile, w.mmFiles = nil, nil, nil
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
