package api

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/status"
)

// Report backoff after a failed POST; the next change or heartbeat still goes out as
// soon as the receiver answers again.
var reportBackoff = restart.Policy{MinPeriod: time.Second, MaxPeriod: time.Minute, Backoff: 2, MaxJitter: time.Second}

// minReportGap coalesces bursts of changes into at most a few reports per second.
const minReportGap = 250 * time.Millisecond

// finalReportTimeout bounds Stop: the report in flight finishing, then the last one.
const finalReportTimeout = 2 * time.Second

// Reporter POSTs the status document to --report-url on every change (coalesced)
// and every --report-interval, in its own goroutine so a slow or hanging receiver
// never delays supervision and never queues more than one pending document.
type Reporter struct {
	url      string
	interval time.Duration
	status   func() status.Document
	log      zerolog.Logger
	client   *http.Client
	kick     chan struct{}
	stopCtx  context.Context    // done once Stop is called: no report begins after it
	stop     context.CancelFunc // Stop's
	cancel   context.CancelFunc // ends a report in flight that Stop no longer waits for
	done     chan struct{}
}

// StartReporter starts reporting the documents of statusDoc to url: at once, on
// every Kick and every interval.
func StartReporter(url string, interval time.Duration, statusDoc func() status.Document, log zerolog.Logger) *Reporter {
	ctx, cancel := context.WithCancel(context.Background())
	stopCtx, stop := context.WithCancel(context.Background())
	r := &Reporter{url: url, interval: interval, status: statusDoc, log: log,
		client: &http.Client{Timeout: 10 * time.Second}, kick: make(chan struct{}, 1),
		stopCtx: stopCtx, stop: stop, cancel: cancel, done: make(chan struct{})}
	go r.run(ctx)
	return r
}

// Kick asks for a report: some status changed. It never blocks.
func (r *Reporter) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *Reporter) run(ctx context.Context) {
	defer close(r.done)
	heartbeat := time.NewTimer(0)
	defer heartbeat.Stop()
	fails := 0
	var last time.Time
	for {
		select {
		case <-r.stopCtx.Done():
			return
		case <-heartbeat.C:
		case <-r.kick:
			if gap := minReportGap - time.Since(last); gap > 0 && !restart.Sleep(r.stopCtx, gap) {
				return
			}
		}
		last = time.Now()
		doc := r.status()
		doc.LastHeartbeatTime = status.Ptr(time.Now())
		if err := postJSON(ctx, r.client, r.url, doc); err != nil {
			fails++
			delay := reportBackoff.Delay(fails, rand.Float64)
			r.log.Warn().Err(err).Dur("retry_in_ms", delay).Msg("status report failed")
			heartbeat.Reset(delay)
			continue
		}
		fails = 0
		heartbeat.Reset(r.interval)
	}
}

// Stop ends the reports with one last report of the final state, within
// finalReportTimeout. A report in flight is let finish first rather than cut off: a
// receiver that serves one connection at a time may otherwise still be reading the
// cut one when the last report comes, and miss it.
func (r *Reporter) Stop() {
	deadline := time.Now().Add(finalReportTimeout)
	r.stop()
	select {
	case <-r.done:
	case <-time.After(time.Until(deadline)):
		r.cancel()
		<-r.done
	}
	r.cancel()
	finalCtx, cancelFinal := context.WithDeadline(context.Background(), deadline)
	defer cancelFinal()
	doc := r.status()
	doc.LastHeartbeatTime = status.Ptr(time.Now())
	_ = postJSON(finalCtx, r.client, r.url, doc)
}

func postJSON(ctx context.Context, client *http.Client, url string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return &httpStatusError{resp.StatusCode}
	}
	return nil
}

type httpStatusError struct{ code int }

func (e *httpStatusError) Error() string { return "receiver answered " + http.StatusText(e.code) }
