package resources

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tend-sh/tend/internal/beneath"
	"github.com/tend-sh/tend/restart"
)

// copyBuffer is the size of the buffer a download streams through: large enough
// that a loopback or LAN download is not bound by system calls, small enough to
// keep tend's memory flat.
const copyBuffer = 256 << 10

// Source is what to fetch: URLs tried in order, and the checksum the bytes must have.
type Source struct {
	Name     string // the resource's name, for messages
	URLs     []string
	Checksum Checksum
	Root     string // instance.dir: the download's directory is resolved beneath it
}

// fetchable returns the URLs tend can fetch (http, https, file) and the ones it
// skips (rbtorrent:, sbr:; validation rejected anything else).
func fetchable(urls []string) (fetch, skip []string) {
	for _, u := range urls {
		scheme, _, _ := strings.Cut(u, ":")
		switch strings.ToLower(scheme) {
		case "http", "https", "file":
			fetch = append(fetch, u)
		default:
			skip = append(skip, u)
		}
	}
	return fetch, skip
}

// Progress is how far the current download of a resource is; status reads it while
// the download writes it.
type Progress struct {
	done  atomic.Int64
	total atomic.Int64 // -1 while unknown
}

// Bytes returns the bytes received and the expected total (nil when unknown).
func (p *Progress) Bytes() (int64, *int64) {
	done, total := p.done.Load(), p.total.Load()
	if total < 0 {
		return done, nil
	}
	return done, &total
}

func (p *Progress) reset(total int64) {
	p.done.Store(0)
	p.total.Store(total)
}

// fetcher downloads sources into temporary files and verifies them on the way.
type fetcher struct {
	opts   Options
	client *http.Client
}

func newFetcher(opts Options) *fetcher {
	dialer := &net.Dialer{Timeout: opts.ConnectTimeout, KeepAlive: 30 * time.Second}
	return &fetcher{opts: opts, client: &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: opts.ConnectTimeout,
		// The checksum is of the bytes the server holds: never ask for a transfer
		// encoding that Go would undo on the way.
		DisableCompression: true,
		ForceAttemptHTTP2:  true,
		MaxIdleConns:       4,
		IdleConnTimeout:    30 * time.Second,
	}}}
}

// fetch tries every URL of src in order, and repeats the round with the jittered
// backoff of opts.Retry until one attempt gives a file with the right checksum, ctx
// ends, or rounds rounds failed (0: no limit). failed is called after every failed
// round with its error. It returns the path of a verified, fsynced temporary file in
// dir named after prefix, or what finish (when not nil) made of it: a failure of
// finish fails the attempt like a bad download. The caller renames or removes it.
// wrap, when not nil, runs every round in place of the download, which it is given
// as a function: it may make the file another way first (a local copy).
func (f *fetcher) fetch(ctx context.Context, src Source, dir, prefix string, p *Progress, rounds int, finish func(string) (string, error), wrap func(download func() (string, error)) (string, error), failed func(error)) (string, error) {
	urls, skipped := fetchable(src.URLs)
	if len(skipped) > 0 {
		f.opts.Log.Info().Str("resource", src.Name).Strs("urls", skipped).Msg("skipping URLs tend cannot fetch (rbtorrent:, sbr:)")
	}
	if len(urls) == 0 {
		return "", errors.New("no http, https or file URL")
	}
	download := func() (string, error) { return f.round(ctx, src, urls, dir, prefix, p, finish) }
	if wrap == nil {
		wrap = func(download func() (string, error)) (string, error) { return download() }
	}
	for round := 1; ; round++ {
		path, err := wrap(download)
		if err == nil {
			return path, nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		}
		failed(err)
		if rounds > 0 && round >= rounds {
			return "", err
		}
		delay := f.opts.Retry.Delay(round, rand.Float64)
		if errors.Is(err, ErrUnsafeArchive) {
			// Fetching again gives the same bytes (or ones the same server made the
			// same way): retry rarely, and a reload not at all.
			if rounds > 0 {
				return "", err
			}
			delay = max(delay, f.opts.BadArchiveRetry)
		}
		f.opts.Log.Warn().Str("resource", src.Name).Err(err).Dur("retry_in_ms", delay).Msg("fetching resource failed")
		if !restart.Sleep(ctx, delay) {
			return "", fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		}
	}
}

// round tries each URL once, in order.
func (f *fetcher) round(ctx context.Context, src Source, urls []string, dir, prefix string, p *Progress, finish func(string) (string, error)) (string, error) {
	var msgs []string
	var errs []error
	for _, u := range urls {
		path, err := f.attempt(ctx, src, u, dir, prefix, p)
		if err == nil && finish != nil {
			path, err = finish(path)
		}
		if err == nil {
			return path, nil
		}
		if ctx.Err() != nil {
			return "", err
		}
		f.opts.Log.Debug().Str("resource", src.Name).Str("url", u).Err(err).Msg("download attempt failed")
		if len(urls) == 1 {
			return "", err
		}
		msgs = append(msgs, u+": "+err.Error())
		errs = append(errs, err)
	}
	return "", &roundError{msg: strings.Join(msgs, "; "), errs: errs}
}

// roundError says what every URL of a round gave, and keeps the errors for
// errors.Is (an unsafe archive from any URL is retried rarely).
type roundError struct {
	msg  string
	errs []error
}

func (e *roundError) Error() string   { return e.msg }
func (e *roundError) Unwrap() []error { return e.errs }

// attempt downloads one URL into a new temporary file, hashing on the way, and
// returns its path once the checksum matched and the data is on disk.
func (f *fetcher) attempt(ctx context.Context, src Source, rawURL, dir, prefix string, p *Progress) (path string, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d, err := f.open(ctx, cancel, src.Root, rawURL)
	if err != nil {
		return "", err
	}
	defer d.close()
	tmp, err := createTemp(src.Root, dir, prefix)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			_ = beneath.RemoveAll(src.Root, tmp.Name())
		}
	}()
	p.reset(d.total)
	h := src.Checksum.newHash()
	w := &progressWriter{f: tmp, fd: int(tmp.Fd()), p: p, log: f, name: src.Name, start: time.Now()}
	n, err := copyHashing(w, d.body, h)
	switch {
	case err != nil && d.stalled.Load():
		return "", fmt.Errorf("stalled: no data for %s after %d bytes", f.opts.IdleTimeout, n)
	case errors.Is(err, io.ErrUnexpectedEOF) && d.total >= 0:
		return "", fmt.Errorf("connection closed after %d of %d bytes", n, d.total)
	case err != nil:
		return "", httpError(err, &d.stalled, f.opts.IdleTimeout)
	case d.total >= 0 && n != d.total:
		return "", fmt.Errorf("short body: %d of %d bytes", n, d.total)
	}
	if err := src.Checksum.check(h); err != nil {
		return "", err
	}
	// createTemp makes the file private; a resource is read by the containers.
	if err := tmp.Chmod(0o644); err != nil {
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	p.total.Store(n) // known now, also when the server did not say
	w.finished(n)
	return tmp.Name(), nil
}

// download is an opened URL: its body and length (-1: unknown).
type download struct {
	body    io.Reader
	total   int64
	stalled atomic.Bool // the idle timer fired (cancelling the request)
	close   func()
}

// open opens a file: URL, or sends the GET of any other. One timer covers the wait for
// the answer and every gap in the body: a server that stops sending fails the attempt
// (cancel) instead of hanging it.
//
// A file: path beneath root (instance.dir) is resolved beneath it: a symlink there
// leading out would copy a root-only file into a resource the containers read.
func (f *fetcher) open(ctx context.Context, cancel context.CancelFunc, root, rawURL string) (*download, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(u.Scheme, "file") {
		file, err := beneath.OpenFile(root, u.Path, os.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil, err
		}
		fi, err := file.Stat()
		if err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("%s is not a regular file", u.Path)
		}
		if err != nil {
			file.Close()
			return nil, err
		}
		return &download{body: file, total: fi.Size(), close: func() { file.Close() }}, nil
	}
	d := &download{}
	idle := time.AfterFunc(f.opts.IdleTimeout, func() { d.stalled.Store(true); cancel() })
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		idle.Stop()
		return nil, err
	}
	req.Header.Set("User-Agent", "tend")
	resp, err := f.client.Do(req)
	if err != nil {
		idle.Stop()
		return nil, httpError(err, &d.stalled, f.opts.IdleTimeout)
	}
	if resp.StatusCode != http.StatusOK {
		idle.Stop()
		resp.Body.Close()
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	d.body, d.total = &idleReader{r: resp.Body, idle: idle, timeout: f.opts.IdleTimeout}, resp.ContentLength
	d.close = func() { idle.Stop(); resp.Body.Close() }
	return d, nil
}

// httpError says why a request failed without Go's URL noise.
func httpError(err error, stalled *atomic.Bool, idle time.Duration) error {
	if stalled.Load() {
		return fmt.Errorf("stalled: no answer for %s", idle)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return errors.New("connection refused")
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}

// idleReader pushes the stall timer back on every read that brought data.
type idleReader struct {
	r       io.Reader
	idle    *time.Timer
	timeout time.Duration
}

func (r *idleReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if n > 0 {
		r.idle.Reset(r.timeout)
	}
	return n, err
}

// progressWriter writes to the file, counts bytes for status and logs percent and
// rate at most every ProgressEvery once a download has taken ProgressAfter.
// It also starts the disk writeback of every writebackEvery bytes as they
// arrive, so the fsync at the end waits for the last stretch only instead of the
// whole file: writing to disk overlaps with the download.
type progressWriter struct {
	f       *os.File
	p       *Progress
	log     *fetcher
	name    string
	start   time.Time
	lastLog time.Time
	fd      int   // f's descriptor, for the writeback hint
	synced  int64 // bytes whose writeback was started
}

// writebackEvery is how many written bytes make tend start their writeback.
const writebackEvery = 8 << 20

func (w *progressWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	done := w.p.done.Add(int64(n))
	if done-w.synced >= writebackEvery {
		// Only a hint: an error here shows again in the fsync that ends the download.
		_ = unix.SyncFileRange(w.fd, w.synced, done-w.synced, unix.SYNC_FILE_RANGE_WRITE)
		w.synced = done
	}
	now := time.Now()
	opts := w.log.opts
	if now.Sub(w.start) >= opts.ProgressAfter && now.Sub(w.lastLog) >= opts.ProgressEvery {
		w.lastLog = now
		ev := opts.Log.Info().Str("resource", w.name).Int64("bytes_done", done).Str("rate", rate(done, now.Sub(w.start)))
		if total := w.p.total.Load(); total > 0 {
			ev = ev.Int64("bytes_total", total).Str("percent", fmt.Sprintf("%.1f%%", 100*float64(done)/float64(total)))
		}
		ev.Msg("downloading")
	}
	return n, err
}

// finished logs the end of a download that took long enough to have logged progress.
func (w *progressWriter) finished(n int64) {
	took := time.Since(w.start)
	if took >= w.log.opts.ProgressAfter {
		w.log.opts.Log.Info().Str("resource", w.name).Int64("bytes", n).Dur("took_ms", took).Str("rate", rate(n, took)).Msg("downloaded")
	}
}

// rate formats bytes per second in MiB/s.
func rate(n int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MiB/s", float64(n)/d.Seconds()/(1<<20))
}

// hashBuffers is how many copyBuffer-sized buffers are in flight between the
// reader and the hashing goroutine: memory stays at hashBuffers×copyBuffer.
const hashBuffers = 4

// copyHashing copies src to dst and feeds every byte to h (nil: none) on the way.
// The hash runs in its own goroutine, overlapping with the network and the disk,
// so the checksum costs neither a second pass over the file nor (on two cores)
// much wall time.
func copyHashing(dst io.Writer, src io.Reader, h hash.Hash) (int64, error) {
	if h == nil {
		return io.CopyBuffer(dst, src, make([]byte, copyBuffer))
	}
	free := make(chan []byte, hashBuffers)
	for range hashBuffers {
		free <- make([]byte, copyBuffer)
	}
	full := make(chan []byte, hashBuffers)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b := range full {
			h.Write(b)
			free <- b[:cap(b)]
		}
	}()
	defer func() { close(full); <-done }()
	var written int64
	for {
		buf := <-free
		n, rerr := src.Read(buf)
		if n > 0 {
			m, werr := dst.Write(buf[:n])
			written += int64(m)
			if werr == nil && m < n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return written, werr
			}
			full <- buf[:n]
		} else {
			free <- buf
		}
		if rerr == io.EOF {
			return written, nil
		}
		if rerr != nil {
			return written, rerr
		}
	}
}
