package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/tend-sh/tend/restart"
	"github.com/tend-sh/tend/status"
)

// Report backoff after a failed POST; the next change or heartbeat still goes out as
// soon as the receiver answers again.
var reportBackoff = restart.Policy{MinPeriod: time.Second, MaxPeriod: time.Minute, Backoff: 2, MaxJitter: time.Second}

// minReportGap coalesces bursts of changes into at most a few reports per second.
const minReportGap = 250 * time.Millisecond

// startReporter POSTs the status document to --report-url on every change (coalesced)
// and every --report-interval, in its own goroutine so a slow or hanging receiver
// never delays supervision and never queues more than one pending document.
func (sv *Supervisor) startReporter() func() {
	ctx, cancel := context.WithCancel(context.Background())
	sv.reportKick = make(chan struct{}, 1)
	done := make(chan struct{})
	interval := sv.opts.ReportInterval // --report-interval, 3m unless given
	client := &http.Client{Timeout: 10 * time.Second}
	go func() {
		defer close(done)
		heartbeat := time.NewTimer(0)
		defer heartbeat.Stop()
		fails := 0
		var last time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-heartbeat.C:
			case <-sv.reportKick:
				if gap := minReportGap - time.Since(last); gap > 0 {
					if !restart.Sleep(ctx, gap) {
						return
					}
				}
			}
			last = time.Now()
			doc := sv.Status()
			doc.LastHeartbeatTime = status.Ptr(time.Now())
			if err := postJSON(ctx, client, sv.opts.ReportURL, doc); err != nil {
				fails++
				delay := reportBackoff.Delay(fails, rand.Float64)
				sv.log.Warn().Err(err).Dur("retry_in_ms", delay).Msg("status report failed")
				heartbeat.Reset(delay)
				continue
			}
			fails = 0
			heartbeat.Reset(interval)
		}
	}()
	return func() {
		// One last report of the final state, bounded in time.
		cancel()
		<-done
		finalCtx, cancelFinal := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancelFinal()
		doc := sv.Status()
		doc.LastHeartbeatTime = status.Ptr(time.Now())
		_ = postJSON(finalCtx, client, sv.opts.ReportURL, doc)
	}
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
