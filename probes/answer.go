package probes

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http/httputil"
	"time"
)

// answer is what an HTTP check takes from a response.
type answer struct {
	code  int
	body  []byte // only when asked for: at most MaxBody+1 bytes
	reuse bool   // the response was read whole and the server keeps the connection open
}

// malformed is a response that is not HTTP/1.x; its text is the failure's detail.
type malformed string

func (m malformed) Error() string { return "malformed HTTP answer: " + string(m) }

// readAnswer reads one HTTP/1.x response from br, keeping its body when wantBody
// (else the body is skipped). When the response says how long it is (Content-Length,
// chunked, or a status without a body) it reads exactly that much, so that a kept
// connection can carry the next request. It is a small part of what net/http's
// ReadResponse does, at a fraction of its cost: the status line, three headers, and
// the body; the check runs every second for every probe of an instance.
func readAnswer(br *bufio.Reader, wantBody bool) (answer, error) {
	code, http10, err := readStatus(br)
	if err != nil {
		return answer{}, err
	}
	return readRest(br, code, http10, wantBody)
}

// readRest reads the headers and the body of an answer whose status line was read.
func readRest(br *bufio.Reader, code int, http10, wantBody bool) (answer, error) {
	f, err := readFraming(br)
	if err != nil {
		return answer{}, err
	}
	a := answer{code: code, reuse: !f.closeAsked && (!http10 || f.keepAlive)}

	switch {
	case code < 200:
		// An interim answer (100 Continue): the final one follows, unread.
		a.reuse = false
		return a, nil
	case code == 204 || code == 304:
		return a, nil // no body, whatever the headers say
	case f.chunked:
		if _, err = a.readBody(httputil.NewChunkedReader(br), wantBody); err == nil && a.reuse {
			err = skipTrailers(br)
		}
	case f.untilEOF || f.length < 0:
		// The body ends when the server closes the connection: read it only when
		// it matters (a server that forgets to close does not fail a status check).
		a.reuse = false
		if wantBody {
			_, err = a.readBody(br, true)
		}
	case f.length > MaxBody:
		a.reuse = false // not worth reading through: the connection is closed instead
		if wantBody {
			_, err = a.readBody(io.LimitReader(br, f.length), true)
		}
	case !wantBody:
		// A probe's usual answer: a short body, read through to reuse the connection,
		// without allocating.
		_, err = br.Discard(int(f.length))
		err = unexpectedEOF(err)
	default:
		var n int64
		if n, err = a.readBody(io.LimitReader(br, f.length), wantBody); err == nil && n < f.length {
			err = io.ErrUnexpectedEOF
		}
	}
	return a, err
}

// framing is what the headers say about the body and the connection.
type framing struct {
	length                int64 // Content-Length; -1: not given
	chunked, untilEOF     bool  // Transfer-Encoding: chunked, or another coding (the body ends with the connection)
	closeAsked, keepAlive bool  // Connection: close, keep-alive
}

// readFraming reads the header lines up to the empty line; only the three that frame
// the answer are looked at.
func readFraming(br *bufio.Reader) (framing, error) {
	f := framing{length: -1}
	for {
		line, err := readLine(br, "header line")
		if err != nil {
			return framing{}, unexpectedEOF(err)
		}
		if len(line) == 0 {
			return f, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return framing{}, malformed("header line " + quoteShort(line))
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, ok := parseLength(value)
			if !ok || (f.length >= 0 && n != f.length) {
				return framing{}, malformed("Content-Length " + quoteShort(value))
			}
			f.length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			// The last coding decides the framing; anything but chunked ends
			// with the connection.
			last := value
			if i := bytes.LastIndexByte(value, ','); i >= 0 {
				last = bytes.TrimSpace(value[i+1:])
			}
			f.chunked = bytes.EqualFold(last, []byte("chunked"))
			f.untilEOF = !f.chunked && !bytes.EqualFold(last, []byte("identity"))
		case bytes.EqualFold(name, []byte("Connection")):
			for _, token := range bytes.Split(value, []byte(",")) {
				token = bytes.TrimSpace(token)
				f.closeAsked = f.closeAsked || bytes.EqualFold(token, []byte("close"))
				f.keepAlive = f.keepAlive || bytes.EqualFold(token, []byte("keep-alive"))
			}
		}
	}
}

// readStatus reads the status line: the code, and whether the answer is HTTP/1.0.
func readStatus(br *bufio.Reader) (code int, http10 bool, err error) {
	line, err := readLine(br, "status line")
	if err != nil {
		return 0, false, err
	}
	code, ok := statusCode(line)
	if !ok {
		return 0, false, malformed(quoteShort(line))
	}
	return code, line[len("HTTP/1.")] == '0', nil
}

// MaxSaid bounds what a failure's message quotes of an HTTP body: enough for "db
// down" or a stack trace's first line, and what one check may add to a container's
// probe results.
const MaxSaid = 256

// saidGrace bounds the read of what a failing answer said (readSaid): its body may
// come in a write of its own after the headers.
const saidGrace = 100 * time.Millisecond

// readSaid reads the headers of a failing answer and the start of its body, at most
// MaxSaid bytes of it: what the server said about its failure. Nothing more is read
// (a 10 MB body stays on the wire) and the connection is not reused. The caller
// bounds the read by saidGrace: a body that ends with the connection (HTTP/1.0,
// Python's http.server) often comes in a write after the headers', and is read
// until the connection ends, MaxSaid or the grace, so a server that keeps it open
// does not turn its failure into a timeout. Errors are not the check's: the status
// has failed it already, and what could be read is kept.
func readSaid(br *bufio.Reader) []byte {
	f, err := readFraming(br)
	if err != nil {
		return nil
	}
	var body io.Reader
	switch {
	case f.chunked:
		body = httputil.NewChunkedReader(br)
	case f.untilEOF || f.length < 0:
		body = br
	default:
		body = io.LimitReader(br, f.length)
	}
	b, _ := io.ReadAll(io.LimitReader(body, MaxSaid))
	return b
}

// readBody reads body to its end, keeping up to MaxBody+1 bytes of it when keep, and
// returns how many bytes it read. A body longer than MaxBody is not read further,
// and the connection not reused.
func (a *answer) readBody(body io.Reader, keep bool) (int64, error) {
	limited := io.LimitReader(body, MaxBody+1)
	var n int64
	var err error
	if keep {
		a.body, err = io.ReadAll(limited)
		n = int64(len(a.body))
	} else {
		n, err = io.Copy(io.Discard, limited)
	}
	if n > MaxBody {
		a.reuse = false
	}
	return n, unexpectedEOF(err)
}

// skipTrailers reads the trailer section that ends a chunked body.
func skipTrailers(br *bufio.Reader) error {
	for {
		line, err := readLine(br, "trailer line")
		if err != nil {
			return unexpectedEOF(err)
		}
		if len(line) == 0 {
			return nil
		}
	}
}

// readLine reads a line of the head without its CRLF (or LF); what names it in the
// error when it does not fit the reader's buffer.
func readLine(br *bufio.Reader, what string) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, malformed(what + " too long")
	}
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

// unexpectedEOF says that a response ended early: an EOF after the status line is
// not the end of an answer.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseLength parses a Content-Length: decimal digits only, as RFC 9110 says.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, d := range v {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}

// describe turns an answer into a check's detail: "" when it passes.
func (h httpJudge) describe(a answer) string {
	switch {
	case h.fails(a.code):
		return fmt.Sprintf("HTTP %d", a.code)
	case !h.wantBody:
		return ""
	case len(a.body) > MaxBody:
		return fmt.Sprintf("HTTP %d, body longer than %d bytes does not match expected answer", a.code, MaxBody)
	case string(a.body) != h.expected:
		return fmt.Sprintf("HTTP %d, body %s does not match expected answer", a.code, quoteShort(a.body))
	}
	return ""
}

// fails reports whether an answer with status code fails whatever its body.
func (h httpJudge) fails(code int) bool { return code < 200 || code > h.maxOK }

// httpJudge is what an http_get handler asks of an answer.
type httpJudge struct {
	wantBody bool   // expected_answer is set and any is not
	expected string // expected_answer
	maxOK    int    // the highest status that passes: 399 for a probe, 299 for an action
}
