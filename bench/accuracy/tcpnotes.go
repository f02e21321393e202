package main

// tcpNotes says what was found comparing netemu's TCP with kernel TCP on
// the same link, mechanism by mechanism, with the commands that measured
// it. The report ends with it.
const tcpNotes = `
# netemu's TCP against kernel TCP: mechanisms found

Each difference between netemu's TCP and kernel TCP found on a link was traced to a rule, compared with the kernel's own
state (its tcp_info timeline, the tcp_probe and tcp_rcvbuf_grow tracepoints, the HyStart counters of /proc/net/netstat
in the server's namespace), and fixed as Linux does it, or is listed here as what remains.

- **HyStart rounds** (Linux 6.14, "tcp_cubic: fix incorrect HyStart round start detection"). Linux counts HyStart's
  rounds from the first ACK and only holds the detectors back until cwnd reaches hystart_low_window; netemu's TCP
  started the first round at the ACK that brought cwnd to 16, in the middle of a flight, so every later round began
  mid-flight too, and the delay detector saw a queue that the flight itself had built. On 200 ms and 5 mbit with a
  1000-packet queue it left slow start at cwnd 77 where the kernel's detector fires at 328 (TCPHystartDelayCwnd; tcp_probe
  shows ssthresh 328); now at 328. On 50 ms and 5 mbit 76 became 96 (kernel 96); on 20 ms and 5 mbit 48 became 55
  (kernel 54). With 0.5 % random loss on the first link, over seeds 1–10
  (` + "`netemu sweep bulk --tcp netemu --rtt 200ms --rate 5mbit --loss 0.5% --seeds 10`" + ` and the same with
  ` + "`--backend kernel --jobs 1`" + `): netemu's TCP 26.32 s median before, 16.57 s after (10.22–43.68 s), kernel
  16.90 s (10.80–45.23 s), 29 drops each; gVisor's TCP 34.46 s.
- **Receive-buffer auto-tuning** as Linux 6.18 has it (tcp_rcv_space_adjust, tcp_rcvbuf_grow, tcp_rcv_rtt_update): the
  buffer holds twice the last RTT's measure plus twice that in proportion to its growth, the measure is what was read less
  what waits unread, the receiver's RTT seeks the minimum, and advmss is the MSS less the timestamp option. Checked against
  the kernel's tcp_rcvbuf_grow tracepoint on the 200 ms / 5 mbit download: the step from 15680 to 30408 bytes gives a
  window clamp of 175062 bytes here and 175061 in the kernel; rcv_ssthresh grows by 2896 bytes a segment on both.
- **HyStart's ACK-delay cushion** (hystart_ack_delay, from the pacing rate tcp_update_pacing_rate keeps): an ACK train must
  span half of delay_min plus up to half a millisecond. No cell tried moved by it.
- **Pushed ACKs** (tcp_measure_rcv_mss, tcp_cleanup_rbuf): a short segment marks its ACK pushed, a second one pushed
  twice, a full one with PSH pushed; a read sends the pending ACK of a small segment only outside interactive (pingpong)
  mode or when pushed twice. netemu's TCP sent it on every read of a segment with PSH, so write-write-read never waited for
  the delayed ACK: nagle at RTT 0 took 0 ms a round where the kernel takes 44.1 ms; now 40.0 ms, and 60.2 ms on 10 ms
  and 10 mbit (kernel 64.0 ms).
- **Timers on Linux's timer wheel** (kernel/time/timer.c, calc_wheel_index and calc_index). A timer of n jiffies lands
  in a bucket strictly after its expiry, rounded up to its level's granularity: one jiffy below 63 jiffies, 8 below 504,
  64 below 4032, and so on; it runs on that bucket's tick. At HZ 250 the 40 ms delayed ACK runs 40–44 ms after it was
  set (44 ms when set on a tick, as at RTT 0), the 200 ms RTO up to 4 ms late, a 1 s SYN timeout up to 32 ms late.
  netemu's TCP runs its retransmission, delayed-ACK, keepalive and TIME-WAIT timers so (the SACK-compression timer is
  an hrtimer in Linux and runs on time). Checked against the kernel: a SYN to an address that never answers, sent from a
  namespace, was retransmitted 1.024, 1.024, 1.024, 1.024, 2.016, 4.064, 8.192 and 16.128 s apart after its second
  transmission, which the wheel gives exactly (tcp's TestTimerWheelMatchesLinux); nagle at RTT 0: 40.0 → 44.0 ms a
  round (kernel 44.1 ms). The published nagle figure, 40.9 ms, was measured where a jiffy is shorter.
- **The lossy table** (its own section above, ten seeds a side): netemu's TCP is within 5 % of the kernel's median on
  every bulk and keepalive cell (queue 8 to 100, loss 0.1 % to 3 %), and fills the 50- and 100-packet queues as the
  kernel does (6 and 8 drops against its 6 and 8), where gVisor's TCP drops none. The page load at 1 % loss is faster than
  the kernel's at the table's five kernel runs (554 against 646 ms at the median), but over 30 seeds a side the two
  agree: 524.7 against 530.2 ms, p10–p90 427.2–629.3 against 432.3–702.3 ms (` + "`netemu sweep page --tcp netemu --loss 1% --seeds 30`" + `,
  and the same with ` + "`--backend kernel`" + ` as root). The five-run medians differ by the cell's spread; the kernel's upper tail is longer.
- **What the kernel column can measure here.** Kernel TCP runs through the TUN bridge, a user-space process on the real
  clock; on this 2-core machine it delivers packets 60–230 µs late on average, with a 99th percentile of 0.15–3 ms under
  load. Where that exceeds a packet's time at the link's rate (above about 80 mbit), the bridge bunches the ACKs the
  bottleneck spaced out: on 10 ms and 100 mbit with a 25-packet queue the kernel's sender bursts into the full queue a
  second time at cwnd 96, below the 108 packets the path holds, and takes 590 ms where netemu's TCP takes 481 ms. Where
  twice the mean lateness is a sizeable share of a short RTT, every round trip of a request-response workload grows by it
  (rpc on 10 ms and 50 mbit: the kernel's calls take 10.6 ms at the median against the link's 10.2 ms). The random grid
  marks such cells and leaves them out of its summary. Kernel mode runs the bridge's delivering thread at real-time
  priority itself where it may (as root; docs/KERNEL.md); on a machine doing other work, run the whole report so
  (` + "`sudo chrt -f 10 ./accuracy`" + `, a built binary): on 10 ms and 100 mbit beside other jobs the bridge's lateness
  went from 100 µs mean and 636 µs p99 to 53 and 285 µs. This report was measured so. Other work on the machine
  shows as stalls: cell 1 of grid 251824 (63.7 ms, 9.7 mbit, queue 6, 19.1 MiB), measured while a build ran, had the
  bridge deliver nothing for 11.6 ms and then ten packets at once, again and again: 81 drops and netemu's TCP 12.0 %
  under the kernel; measured again on a quiet machine, 34 drops and −2.6 %. A single stall does not bias a figure
  (the quiet runs' latest delivery was still 13.5 ms late, at the median); many do, so keep the machine quiet.
- **Simultaneous starts on the virtual clock.** A page load's six connections send their handshake ACKs and first requests
  at one instant of virtual time; kernel TCP's, driven by real goroutines, spread over a few milliseconds. With a
  10-packet queue towards the server (page on 8 ms and 3 mbit, ` + "`netemu compare page --rtt 8ms --rate 3mbit --queue 10 --tcp netemu`" + `)
  twelve packets meet a queue of ten, a request is lost, and its connection waits for a 212 ms timeout: 559 ms against the
  kernel's 419–449 ms. This is the workload's timing on the virtual clock, not TCP's; both of netemu's TCPs show it.
- **GSO packets end with PSH** (tcp_write_xmit, tcp_tso_autosize, __tcp_transmit_skb). Linux sends what it has as GSO
  packets of min(tcp_cwnd_test's quota, tcp_tso_segs) segments: the quota at most half the window, tcp_tso_segs about a
  millisecond at the pacing rate (more on paths of under 16 ms minimum RTT), at least 2; every packet of more than one
  segment gets PSH, which GSO leaves on its last segment. The receiver marks the ACK of a full segment with PSH pushed
  and sends it when the application reads it (tcp_measure_rcv_mss, tcp_cleanup_rbuf), so a flight that ends on an odd
  segment is ACKed at once instead of with the next segment or by the delayed-ACK timer. netemu's TCP set PSH only at
  the end of the queued data. On 24.5 ms, 4 mbit and a 3-packet queue (4 MiB, cell 24 of the grid) the kernel's server
  set PSH on 1024 of 2973 data segments, every second or third, netemu's TCP on 18; the kernel's client sent 1901 ACKs,
  netemu's 1691 before and 1814 after. On 5 ms, 50 mbit and a 100-packet queue (2 MiB): 872 ACKs from the kernel,
  765 before and 851 after. There the kernel's packets are of 5 segments where netemu's are of 2 or 3: Linux holds a
  partial packet back for the next ACK (tcp_tso_should_defer), which netemu's TCP did not then (see TSO deferral).
- **TSO deferral** (tcp_tso_should_defer; cells 3, 6, 9, 12 and 17 of grid 677684, small queues on short paths). When
  the first buffer of Linux's write queue holds more than a segment and an ACK leaves room for only part of it, a
  sender that sent within the last millisecond waits for more room (a GSO packet, or a third of the window) if the
  next ACK is due soon (see the next item for how soon); so it sends fewer, larger bursts, which a 2- or 3-packet
  queue drops more of. netemu's TCP sent whatever each ACK let out. It now keeps the write queue's buffers as
  tcp_sendmsg cuts them (tcp_xmit_size_goal: 64 KiB, at most half the peer's largest window) and defers as Linux
  does. On 2.9 ms, 61.2 mbit, a 3-packet queue, 0.06 % loss (2.8 MB): 681.6 ms before, 1394.8 ms after (seeds 1–10),
  kernel 1880.5 ms, gVisor's TCP 2176.7 ms; on 2.4 ms, 49.5 mbit, queue 2: 8027.1 → 8320.0 ms, kernel 8990.0; on
  6.3 ms, 5.6 mbit, queue 2, 2.4 % loss: 13.83 → 13.31 s, kernel 11.69 s; on 24.5 ms, 4 mbit, queue 3 (the tie below):
  15.05 → 15.84 s (14.58–17.39 s), kernel 13.6–17.9 s. The reference tables do not move.
- **Deferral waits only for an ACK due within a millisecond** (Linux 6.18, "tcp: fix tcp_tso_should_defer() vs large
  RTT"; cell 19 of grid 579724: 237.2 ms, 1.5 mbit, queue 3, 3.6 MiB, lossless). Linux before 6.18 deferred when the
  oldest segment in flight had left at least half an srtt ago; 6.18 expects the next ACK an srtt after that segment
  left and defers only if it is due within min(1 ms, srtt/2). netemu's TCP had the older rule: on that link, with the
  window a third of the path, an ACK of two segments that also grew cwnd sent two and held the third for the next
  ACK, 50 to 100 ms later, which then sent four at once into the 3-packet queue. Matching each ACK that reached the
  server with the packets that entered the queue within a millisecond (compare's --pcap and --mm-log-down): ACKs
  of two segments followed by three packets 20 times and by four 26 times, the kernel's 120 and never; bursts of four
  26, the kernel's none. With the 6.18 rule: 114 and none, bursts of one, two and three 786, 756 and 115 against the
  kernel's 741, 782 and 114. The cell went from 72.9 s to 49.9 s (42.4–53.3 s; the grid's three seeds), kernel
  49.4–60.5 s over the grid's three runs (54.7, 56.5 and 59.75 s in three compare runs); cells 13 (11.1 ms, 3.5 mbit, queue 5), 15 and 16 of that
  grid went from +3.9, +5.9 and −4.7 % to −0.1, −1.0 and −0.6 %.
- **Reordering is data delivered below what was already delivered** (Linux tcp_ack's prior_fack, passed to
  tcp_sacktag_write_queue and tcp_clean_rtx_queue, which call tcp_check_sack_reordering). Linux takes the highest
  sequence SACKed or acknowledged so far before it processes an ACK, and counts reordering only when the ACK reports
  a segment below it, never retransmitted, as delivered: a hole filled after data above it. netemu's TCP compared
  with that mark after the ACK had moved it, so every cumulative ACK counted as reordering; from the first ACK on,
  RACK's reordering window in recovery was a quarter of min_rtt instead of none (tcp_rack_reo_wnd: no reordering
  seen, in recovery, no window), and losses were marked a quarter of a round trip late. Rerunning the emulated side
  of grid 251824 (` + "`-grid 40 -grid-seed 251824 -kernel=false`" + `) moved most lossy cells by under 2 %: cell 36
  (287.7 ms, 259.7 mbit, 1.51 % loss, 1 MiB) from −7.4 to −0.4 % of the kernel, cells 5 and 18 from −3.2 and −1.3 to
  −1.4 and −0.5 %, cell 38 (34.5 ms, 103.9 mbit, queue 62, 0.08 % loss) from −6.8 to −8.5 %. On cell 19 (lossless,
  58.9 ms, 28.9 mbit, queue 27) the first recovery now starts at 347.4 ms, the kernel's at 352.6 ms; it started at
  385.9 ms.
- **SACK blocks are walked in sequence order** (tcp_sacktag_write_queue sorts them; cell 1 of grid 76246: 165.8 ms,
  92.7 mbit, queue 161, 3.1 MiB, lossless). A receiver lists its newest block first. netemu's TCP tagged the blocks in
  that order, so when an ACK grew an older block in order after a newer one, the older block's new data lay below the
  highest SACKed segment and counted as reordering; from then on RACK's window in recovery was a quarter of min_rtt
  (41 ms here) instead of none. In the slow-start overshoot's recovery the kernel retransmitted about 155 losses within
  30 ms from 1456 ms on; netemu's TCP began 38 ms later, in two batches 80 ms apart, its recovery ended 84 ms
  after the kernel's, and the burst at its end filled the queue again: a second recovery (49 more drops). 2248 ms before,
  1876 ms after; the kernel 1874 ms (` + "`netemu compare bulk --tcp netemu --rtt 165.8ms --rate 92.7mbit --queue 161 --size 3205120B --timeline c1.csv`" + `).
- **A held ACK goes out before a third SACK block** (tcp_sack_new_ofo_skb, TCP_SACK_BLOCKS_EXPECTED,
  tcp_sack_compress_send_ack). An ACK carries three SACK blocks beside timestamps. Linux sends the ACK that SACK
  compression holds before a block beyond the first two grows or a third appears; netemu's TCP did not, so with many
  holes some blocks were never reported and the sender retransmitted data that had arrived: 14 such retransmissions
  in cell 1's recovery, 1 after.
- **Quick ACKs are used up by ACKs of out-of-order data** (tcp_dec_quickack_mode as Linux 6.6 counts them: an ACK sent
  while one was scheduled; cell 22 of grid 76246: 64.8 ms, 110.2 mbit, queue 84, 5.1 MiB, lossless). netemu's TCP
  counted only ACKs that advanced rcv_nxt, so a receiver that met a hole while in quick-ACK mode stayed in it and ACKed
  every out-of-order segment at once, where the kernel's compressed its SACKs to one ACK a millisecond. With nine times
  the ACKs the sender's recovery went differently: the kernel's filled the queue (84 of 84) at its end and had a second
  recovery (cwnd 339 → 237), netemu's peaked at 83 and had none. Now both have the second (cwnd 238). 1117 ms before,
  1300 ms after; the kernel 1315 ms.
- **CUBIC's delay_min starts from data** (cell 27 of grid 76246: 94.6 ms, 1 mbit, queue 21, 0.08 % loss, 2.4 MiB). The
  handshake's ACK gives congestion control no RTT in Linux: a passive open's child socket never queued its SYN-ACK
  (tcp_synack_rtt_meas feeds the estimator alone), and an active open's sample comes before the module's init
  (tcp_init_transfer; bictcp_init zeroes delay_min). netemu's server gave CUBIC the handshake's 95.5 ms; the first
  data ACK's RTT, 107.4 ms, includes a packet's 12 ms at 1 mbit, so HyStart's delay detector (delay_min + 1/8) fired a
  round early, at cwnd 28 where the kernel's slow start went on to 55. The link bounds the time; the drops moved from
  13 to 50, the kernel's 50 (ten seeds a side).
- Together, rerunning the emulated side of grid 76246 against its kernel figures (` + "`-grid 40 -grid-seed 76246 -grid-kernel-runs 5 -kernel=false`" + `):
  the nine reliable lossless cells went from median 0.5 % and worst 20.0 % to median 0.2 % and worst 1.9 %, all within
  5 %; the sixteen lossy cells kept median 1.3–1.4 % and worst 4.6 %; every reliable cell's drops are within 1.5× of
  the kernel's. That grid is now one these rules were found on; a fresh one measures them.
- **A tail-loss probe goes out whatever the congestion window** (tcp_send_loss_probe calls tcp_write_xmit with push_one
  2, which forces out one segment; cell 33 of grid 466892: 3.8 ms, 1.5 mbit, queue 2, 2.36 % loss, 1.2 MiB). netemu's
  TCP sent the probe's new segment only if the window had room, so with a whole window unanswered (its last segments
  lost and the ACK of the one that arrived lost too) no probe left and the RTO fired instead, 250 ms later where the
  probe was due after 46 ms: five such waits in seed 1's run beside the timeout both runs share. Seed 1: 9651 ms before, 8607 ms after,
  the kernel 8537 ms (` + "`netemu compare bulk --tcp netemu --rtt 3.8ms --rate 1.5mbit --queue 2 --loss 2.36% --size 1207296B --timeline c33.csv`" + `).
  Found on the fresh grid after it was drawn, so that grid's figures are from before this rule.
- **An RTO ends a tail-loss probe's episode** (tcp_enter_loss clears tlp_high_seq; cell 13 of grid 693579 with BBR: page
  on 36.4 ms and 2.1 mbit, measured with queues of 2–8). netemu's TCP kept the probe's episode open across an RTO, so
  every later flight of that connection whose tail was lost waited for the RTO (250 ms more at this RTT) where Linux
  probes after two round trips, and the ACK past the old episode's end cut the window. With a queue of 8 packets it
  took 998–1044 ms on 10 of 12 seeds, the kernel 635–822 ms over 9 runs; now 663–687 ms (` + "`netemu run page --rtt 36.4ms --rate 2.1mbit --queue 8 --cc bbr --seed N`" + `).
  Both sides drop the same packets; pcaps (--pcap FILE.pcapng) showed the difference in the server's retransmissions.
- **A page's six connects at one instant** (the same cell with its queue of 2). The emulator's client sends its six SYNs
  at one instant: four are dropped on every seed, and their retransmissions a second later again at one instant, so two
  more are lost and the last handshake ends after 2.04–2.07 s (12 seeds' pcaps). The kernel's client connects over
  0.05–1 ms (its goroutines' and system calls' time): one to three SYNs are dropped and 8 of 12 runs completed every
  handshake by 1.05 s. The page took 2546–3843 ms over 20 seeds (median 2861) against the kernel's 1832–3126 over 12
  runs (median 2208): the hosts' time, not TCP; with a queue of 8 both agree (above).
- **RACK's reordering timer has a 2 ms floor before rounding, not 2 jiffies after** (tcp_rack_mark_lost as Linux 6.6 has
  it, "tcp: fix excessive TLP and RACK timeouts from HZ rounding"; the tail-loss probe already had it). At HZ 250 the
  old floor was 8 ms: a 25 ms window fired after 36 ms instead of 28. ` + "`netemu explain bulk --loss 2% --tcp netemu`" + `:
  26.87 s before, 26.72 s after. Found after grid 466892 was drawn.
- **A queue exactly full at the end of a slow-start round** (cell 16 of grid 466892, drawn after the rules above: 167.7 ms,
  29.2 mbit, queue 42, 1.8 MiB, lossless; −6.0 %, the one reliable lossless cell outside 5 %). In the round where cwnd
  goes from 40 to 80 the queue climbs to 42 and stays there, one packet in for each one out, on both sides. The kernel
  dropped the flight's last segment (148) there, found the loss a round later at cwnd 158, and its slow start ended at
  ssthresh 111; netemu's TCP, on the same link code, held exactly 42 of 42 with no drop, went on to cwnd 239 before its
  first loss, and had a second recovery (81 drops against 44), ending near the kernel's window (116 against 111).
  2403 ms against 2557 ms (` + "`netemu compare bulk --tcp netemu --rtt 167.7ms --rate 29.2mbit --queue 42 --size 1874944B --timeline c16.csv --pcap c16.pcap`" + `).
  Both sides are bimodal there: the kernel took 2410–3074 ms over its five runs, netemu's TCP 2401–2546 ms over five
  seeds of the link's dither, so each side has runs of the other's kind. In the kernel's run the round's last burst
  reached the queue in one service interval (three packets in 9 µs, the fourth dropped); netemu's arrived at a
  dequeue's instant. Not yet explained: why the two sides fall on different sides of that edge as often as they do.
- **The kernel's clocks do not start with the run** (cell 13 of grid 396466: 83.5 ms, 7.9 mbit, queue 23, 9.2 MiB,
  lossless; time +0.2 %, drops 12 against 37). In the round where cwnd goes from 40 to 80 the receiver ACKs each
  segment while its rcv_ssthresh grows (tcp_grow_window sets a quick ACK), 1.53 ms apart, under HyStart's 2 ms
  ACK-train delta; the train ends slow start once it spans (delay_min + hystart_ack_delay) / 2, 43.0 ms. The kernel's
  receiver sent 26 single ACKs, then pairs (3.07 ms apart, which end the train), and its slow start went on to cwnd 110
  (37 drops); netemu's sent 33 singles, a train of 44.05 ms, and left slow start at cwnd 70 (12 drops). How long the
  window grows in that round depends on where the round falls against the receiver's millisecond timestamps and
  jiffies, which count its RTT samples and timers. netemu's TCP started its clocks on a tick at the run's first
  instant, so every seed fell the same way; Linux's jiffies and timestamps run from boot, so a connection starts at an
  arbitrary point of both. Each host now starts its clocks at a point of a second drawn from its seed
  (` + "`tcp.Options.ClockPhase`" + `, drawn in tcpstack): on seeds 1–8 the cell takes 10444 ms with 37 drops on six and 10476 ms with
  12 on two, against the kernel's 10427 ms and 37; seed 1 sends the kernel's very ACK pattern, 26 singles and 7 pairs.
  Cell 16 of grid 466892 (above) keeps its split: its runs differ by the link's dither, not by the phase.
- **A passive open's first window counts the timestamp option** (tcp_openreq_init_rwin rounds the SYN-ACK's window
  down to the MSS less TCPOLEN_TSTAMP_ALIGNED when the SYN offered timestamps; tcp_connect_init's SYN has no such
  adjustment on a new connection). The kernel's server offers 65160 bytes (45 × 1448), its client 64240 (44 × 1460);
  netemu's TCP offered 64240 on both. Seen in the SYN-ACKs of ` + "`netemu compare bulk --tcp netemu --pcap`" + `.
- **HyStart's ACK train against the bridge's timing** (cell 40 of grid 396466: 172.3 ms, 6.2 mbit, queue 162, 4.3 MiB,
  lossless; time +2.2 %, drops 11 against 102). At 6.2 mbit a packet takes 1935 µs, 65 µs under hystart_ack_delta
  (2 ms), so the receiver's quick ACKs form a train only while no gap between them grows by 65 µs. On the virtual clock
  none does: netemu's TCP leaves slow start by the train at cwnd 127 (span 89.0 ms against 87.7 ms) and drops 11. The
  kernel's ACKs reach it through the TUN bridge, late by 44 µs on average and 147 µs at the 99th percentile, which
  breaks every train: its slow start goes on until the delay detector fires at cwnd 328, and 102 packets are dropped.
  With the link's dither raised from 1 µs to 100 µs (a local experiment, not a setting), netemu's TCP takes the
  kernel's path exactly: 6783.8 ms and 102 drops on five seeds, where the kernel took 6723–6786 ms with 102. So the
  kernel's figure here measures the bridge's jitter as much as the link; a real path's interrupt and NIC timing would
  do the same. Left as it is in the TCP: the emulator's hosts have no timing noise to model, and the rule is Linux's.
  The grid now marks such cells (✗) before their figures enter the summary: where one or two packets' time is under
  hystart_ack_delta by no more than the bridge's 99th percentile, on bulk cells (gridRow.ackTrainEdge).
- **An ACK train that a kernel run may or may not keep** (cell 24 of grid 393790: 91.4 ms, 20.1 mbit, queue 65,
  0.07 %, 5.7 MiB; +15.5 %). At 20.1 mbit two packets take 1.19 ms, 0.81 ms under hystart_ack_delta, and the train
  needs every ACK of a round within that margin for half the RTT. The kernel's runs split: over seeds 1–20, 7 had
  16–22 drops (median 4501 ms) and 13 had 36–50 (median 3526 ms); the median of all is 3729 ms. On seed 2 netemu's TCP leaves slow
  start by the train at cwnd 158, 553 ms (the BDP is 159 packets), the kernel one round later at cwnd 240. netemu's
  TCP keeps the train on every seed: 4249 ms over 60 seeds, 19–20 drops; built with the train detector off (a local
  experiment) it takes 3280 ms over 20 seeds with 86 drops, the kernel's fast mode. So in most kernel runs one ACK
  came more than 0.81 ms late: the bridge's latest delivery in the cell was 2.05 ms (its 99th percentile 0.15 ms), or
  a stretch ACK of four segments, which Linux sends when the receiving application has not yet read. The harness's
  timing, not a TCP rule; the grid's ackTrainEdge judges only the 99th percentile, and a run's rarer stalls decide
  here. Left as it is.
- **The send buffer holds GSO packets** (cells 1 and 10 of grid 677684: 66.3 ms, 211 mbit, queue 622, 44 MB, and 99.6 ms,
  226.7 mbit, queue 2892, 52 MB, both lossless). netemu's TCP sized its send buffer as tcp_sndbuf_expand does (twice
  the window at 4352 bytes a segment, at most tcp_wmem[2], 4 MiB) but also filled it at 4352 bytes a segment, so no more
  than 1.39 MB was ever in flight, under these paths' 1.7 and 2.8 MB: 3157.7 and 5089.8 ms where the kernel took 2525.7
  and 2810.5 ms. Linux fills the buffer with the data's own truesize: tcp_sendmsg copies into page fragments of buffers
  that cost 1280 bytes beyond their data (tcp_stream_alloc_skb), and the queue's buffers are GSO packets of tcp_tso_segs
  segments (tso_fragment), so 4 MiB holds about 4 MB of data. Counted so, netemu's TCP took 2502.5 and 2760.0 ms.
- **An ACK-clock tie on the virtual clock** (cell 24 of the grid: 24.5 ms, 4 mbit, queue 3, 4 MiB; ` + "`netemu compare bulk --tcp netemu,gvisor --rtt 24.5ms --rate 4mbit --queue 3 --size 4MiB`" + `).
  In a flight of back-to-back pairs the ACKs come back exactly two packets' serialization apart, so each pair reaches
  the queue at the instant the pair before it leaves the wire. On the virtual clock the departure came first, and the
  3-packet queue overflowed only under a standing queue: netemu's episodes began at cwnd 12 (BDP 8 + 3 + 1). On a real
  clock any noise puts about half of those arrivals before the departure, and a pair, or a burst of three when the
  window grows, overflows at cwnd 4–10. 41 of the kernel's 71 drops came less than 0.3 ms before the packet on the
  wire left (9 of netemu's 59); the kernel's window averaged 6.7–7.1 packets, netemu's 9.0. The kernel took 15.87,
  16.31 and 16.06 s (13.6–17.9 s over ten runs, 62–82 drops); netemu's TCP 10.13 s, gVisor's 14.11 s. Ordering that
  one tie by a seeded draw gave netemu's TCP 11.44 s (11.01–12.34 s over 10 seeds), not enough: the virtual clock's
  instants fall on exact microseconds, which Linux's TCP clock counts in (RTT samples, HyStart, RACK), so other
  comparisons tie too; 1 ns of netem jitter gave 13.36 s, 1 µs 15.24 s. So an experiment's link now dithers each
  arrival by a seeded draw under 1 µs, in order (` + "`link.Config.Dither`" + `, ` + "`link.DefaultDither`" + `: the TCP clock's
  resolution; since replaced by the hosts' noise, link.DefaultNoise, docs/HOSTNOISE.md): netemu's TCP 15.05 s (13.66–15.90 s over 30 seeds, 76.5 drops), gVisor's 24.48 s (22.50–26.90 s, 178
  drops). Cell 16 of a later grid (34.2 ms, 10.6 mbit, queue 3, 1 MiB), where the kernel took 4826 ms: netemu's TCP
  1946 ms before, 3799 ms after (3108–4724 ms over 20 seeds), gVisor's 8474 ms. Not TCP: how a clock without noise
  orders events at one instant. The reference tables move by at most 0.1 ms.
- **Time on the real clock per request** (cell 8 of the grid: keepalive on 5.7 ms, 4.5 mbit, queue 3). netemu's and
  gVisor's TCPs take the same time, 166.1 ms reusing one connection and 285.3 ms with fresh ones; the kernel 186.9 and
  321.3 ms, about 1 ms more for each of the 20 requests. It is as much on RTT 0 and 4.5 mbit (0.99 ms a request) and on
  5.7 ms unlimited (0.96 ms), and 0.45 ms on RTT 0 unlimited, where no packet waits for a timer: the kernel's side
  spends real time in the HTTP client and server and in the bridge's timed deliveries, which the virtual clock does not
  count. Not TCP.
- **A host answers in no time on the virtual clock** (cell 22 of grid 251824: 107.4 ms, 5.4 mbit, queue 10, 8.9 MiB,
  lossless; +11.0 %). The server ACKs the request at once (quick-ACK mode, __tcp_ack_snd_check) and its application
  answers with the 10-segment initial window. On the virtual clock the answer leaves at the ACK's instant, so eleven
  packets meet a queue of ten (the packet on the wire counts), one is dropped, and the first recovery ends slow start
  at cwnd 18. The kernel's server answers about a millisecond after its ACK, which has left the 5.4 mbit link 0.1 ms
  after it was sent: the initial window fits, and its first recovery comes at cwnd 38. The transfer follows from where
  slow start ended. Not TCP: the hosts' time, as in the simultaneous starts above. Measured again on cell 5 of grid
  253353 (137.9 ms, 2.9 mbit, made lossless): with queues of 9, 10 and 11 packets netemu's TCP took 23777, 23559 and
  21484 ms and the kernel 23678, 21753 and 21493 ms; only the queue of exactly the initial window splits them. The
  grid leaves such cells out (gridRow.firstFlightEdge).
- **Kernel runs that differ by a recovery** (cell 19 of grid 251824: 58.9 ms, 28.9 mbit, queue 27, 4.7 MiB, lossless).
  The kernel's three runs took 2224–3003 ms in that grid and 2188–3120 ms when the cell was measured again
  (` + "`-grid 40 -grid-seed 251824 -grid-cells 19`" + `): a run has one recovery or two. In the slow runs the kernel's ACKs in the first
  recovery came in clumps 1–2.5 ms apart, where the link spaces packets 0.4 ms apart, so its retransmissions left in
  bursts of 6–9 within a millisecond and filled the queue again (cwnd 88 → 63). netemu's TCP (2191 ms, 2179–2192) has
  one recovery, as the kernel's fast runs. The median of three runs falls on either side (−26.2 % in the grid, −0.7 %
  measured again); five runs a lossless cell make it steadier.
`
