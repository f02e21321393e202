// Package tc reads and writes Linux tc's grammar for what a link.Config
// holds, so that a link is described in the words people already use for
// a real one, and one place reads them for every front end (the command's
// flags, study files, emutest, the toxiproxy API, kernel mode's netem).
//
//   - ParseNetem reads a netem line, what follows "tc qdisc add dev X root
//     netem" (delay, jitter and distributions, the loss models, corrupt,
//     duplicate, reorder, rate with its overheads, limit, seed), into a
//     Netem that knows which options it names; Netem.String writes it
//     back as tc would print it, and Netem.Apply sets one direction
//     (Side) of a link.Config, leaving the other's. NetemOf reads a
//     direction back out of a Config.
//   - ParseQdisc and ParseQueue read a queue discipline (pfifo, bfifo,
//     pfifo_head_drop, codel, fq_codel with their parameters) into a
//     Qdisc, a link.Qdisc written and read with tc's words: those each
//     discipline registers in link with its parameters
//     (link.QdiscOption), so that a new one needs nothing here.
//   - ParseRate, ParseSize and their Format counterparts read and write
//     tc's units: 10mbit, 1.5gbit, 64kbps (bytes), 1500b, 64KiB.
//
// A value tc refuses is refused here too, with a message that quotes what
// was written and says what would be taken.
package tc
