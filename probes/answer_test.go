package probes

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"testing"
)

func TestReadAnswer(t *testing.T) {
	long := strings.Repeat("a", MaxBody+1)
	tests := []struct {
		name     string
		raw      string // followed by "NEXT", which must be left unread when reuse
		wantBody bool
		code     int
		body     string
		reuse    bool
		err      string // error text; "" for none
	}{
		{name: "content-length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", wantBody: true, code: 200, body: "ok", reuse: true},
		{name: "content-length skipped", raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", code: 200, reuse: true},
		{name: "header names in any case", raw: "HTTP/1.1 200 OK\r\ncontent-LENGTH:2\r\n\r\nok", wantBody: true, code: 200, body: "ok", reuse: true},
		{name: "bare LF line ends", raw: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", wantBody: true, code: 200, body: "ok", reuse: true},
		{name: "chunked", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\no\r\n1\r\nk\r\n0\r\n\r\n", wantBody: true, code: 200, body: "ok", reuse: true},
		{name: "chunked skipped", raw: "HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nno\r\n0\r\n\r\n", code: 503, reuse: true},
		{name: "chunked with trailers", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Check: 1\r\n\r\n", wantBody: true, code: 200, body: "ok", reuse: true},
		{name: "chunked wins over length", raw: "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", wantBody: true, code: 200, body: "ok", reuse: true},
		{name: "connection close", raw: "HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 2\r\n\r\nok", wantBody: true, code: 200, body: "ok"},
		{name: "HTTP/1.0", raw: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", wantBody: true, code: 200, body: "ok"},
		{name: "HTTP/1.0 keep-alive", raw: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", wantBody: true, code: 200, body: "ok", reuse: true},
		{name: "no length: until EOF", raw: "HTTP/1.1 200 OK\r\n\r\nok", wantBody: true, code: 200, body: "okNEXT"},
		{name: "no length, status only: body not waited for", raw: "HTTP/1.1 200 OK\r\n\r\nok", code: 200},
		{name: "gzip coding: until EOF", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok", wantBody: true, code: 200, body: "okNEXT"},
		{name: "204 has no body", raw: "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", code: 204, reuse: true},
		{name: "304 has no body", raw: "HTTP/1.1 304 Not Modified\r\n\r\n", wantBody: true, code: 304, reuse: true},
		{name: "interim answer", raw: "HTTP/1.1 100 Continue\r\n\r\n", code: 100},
		{name: "body over the bound", raw: "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(long)) + "\r\n\r\n" + long, wantBody: true, code: 200, body: long},
		{name: "body over the bound, status only", raw: "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(long)) + "\r\n\r\n" + long, code: 200},
		{name: "chunked over the bound", raw: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10001\r\n" + long + "\r\n0\r\n\r\n", wantBody: true, code: 200, body: long},
		{name: "short body", raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok", code: 200, err: "unexpected EOF"},
		{name: "short body kept", raw: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok", wantBody: true, code: 200, err: "unexpected EOF"},
		{name: "headers cut", raw: "HTTP/1.1 200 OK\r\nContent-Len", err: "unexpected EOF"},
		{name: "garbage", raw: "SSH-2.0-OpenSSH\r\n\r\n", err: `malformed HTTP answer: "SSH-2.0-OpenSSH"`},
		{name: "header without colon", raw: "HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", err: `malformed HTTP answer: header line "nonsense"`},
		{name: "bad length", raw: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", err: `malformed HTTP answer: Content-Length "-1"`},
		{name: "two lengths", raw: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", err: `malformed HTTP answer: Content-Length "3"`},
		{name: "header too long", raw: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("x", 5000) + "\r\n\r\n", err: "malformed HTTP answer: header line too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := tt.raw + "NEXT"
			if tt.err == "unexpected EOF" {
				raw = tt.raw // the answer is cut: nothing follows it
			}
			br := bufio.NewReaderSize(strings.NewReader(raw), 4096)
			a, err := readAnswer(br, tt.wantBody)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if a.code != tt.code || string(a.body) != tt.body || a.reuse != tt.reuse {
				t.Errorf("answer {code %d, body %d bytes %.20q, reuse %v}, want {code %d, body %d bytes %.20q, reuse %v}",
					a.code, len(a.body), a.body, a.reuse, tt.code, len(tt.body), tt.body, tt.reuse)
			}
			if a.reuse {
				// Exactly the answer was read: the next one starts where it ended.
				rest, _ := io.ReadAll(br)
				if string(rest) != "NEXT" {
					t.Errorf("left %q unread, want exactly the next answer (NEXT)", rest)
				}
			}
		})
	}
}
