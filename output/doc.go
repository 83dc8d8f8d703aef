// Package output owns the lines the supervised processes write: it splits them
// (LineWriter), prefixes and styles them for tend's console (Console, Style) without
// ever blocking on it (Queue), appends them to log files with rotation (LogFile) and
// keeps the newest for readers who follow them (Ring, Wakers). It knows nothing about
// lifecycles: package container decides where each process's streams go.
//
// Matching a line for readiness by log_line (LineMatch) lives here too, because a
// line is matched where the LineWriter splits it, in its buffer and without a second
// pass over the output; what a match means is the container's business (a callback).
package output
