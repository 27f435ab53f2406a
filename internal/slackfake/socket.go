package slackfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

const (
	// debugReconnectsLifetime is the connection lifetime Slack applies to a
	// URL with debug_reconnects=true (docs.slack.dev Using Socket Mode).
	debugReconnectsLifetime = 360 * time.Second
	// approximateConnectionTime is hello's debug_info estimate when the fake
	// never refreshes (Slack's example value, about five hours).
	approximateConnectionTime = 18060
	writeTimeout              = 10 * time.Second
	maxClientFrame            = 1 << 20
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:  32 << 10,
	WriteBufferSize: 32 << 10,
	// slack-go sends Origin: https://api.slack.com.
	CheckOrigin: func(*http.Request) bool { return true },
}

// wsConn is one Socket Mode WebSocket. Its writer goroutine is the only one
// that writes frames; the handler goroutine reads.
type wsConn struct {
	id         int
	ws         *websocket.Conn
	lifetime   time.Duration
	wake       chan struct{} // cap 1: frames were queued
	done       chan struct{} // closed by close
	writerDone chan struct{}
	closeOnce  sync.Once

	// Guarded by Server.mu.
	info    *Connection // its record in State
	queue   []outFrame
	closing bool // a disconnect frame is queued: route nothing more here
}

type outFrame struct {
	data       []byte
	env        *Envelope     // nil for hello and disconnect
	closeAfter time.Duration // >0: close the socket this long after the write
}

func (c *wsConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

// handleSocket serves /link/?ticket=…: the Socket Mode WebSocket.
func (s *Server) handleSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	exp, ok := s.tickets[ticket]
	delete(s.tickets, ticket) // single use
	closed := s.closed
	s.mu.Unlock()
	if closed {
		http.Error(w, "server closed", http.StatusServiceUnavailable)
		return
	}
	if !ok || time.Now().After(exp) {
		s.logf("refused a WebSocket with an unknown or used ticket")
		http.Error(w, "invalid or expired ticket", http.StatusUnauthorized)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the client
	}
	ws.SetReadLimit(maxClientFrame)

	lifetime := s.cfg.connLifetime
	if lifetime == 0 && r.URL.Query().Get("debug_reconnects") == "true" {
		lifetime = debugReconnectsLifetime
	}
	c := &wsConn{ws: ws, lifetime: lifetime, wake: make(chan struct{}, 1), done: make(chan struct{}), writerDone: make(chan struct{})}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close()
		return
	}
	if len(s.conns) >= s.cfg.maxConns {
		s.st.refused++
		s.wg.Add(1)
		s.notifyLocked()
		s.mu.Unlock()
		defer s.wg.Done()
		s.logf("refused a WebSocket: %d connections already open (too_many_websockets)", s.cfg.maxConns)
		s.refuseSocket(ws)
		return
	}
	s.wg.Add(2) // this handler and the writer
	s.connSeq++
	c.id = s.connSeq
	c.info = &Connection{ID: c.id, OpenedAt: time.Now()}
	s.st.conns = append(s.st.conns, c.info)
	s.conns[c.id] = c
	s.st.openConns++
	s.st.totalConns++
	s.enqueueLocked(c, outFrame{data: s.helloFrameLocked(c)})
	// Events raised while no socket was open go out first, in order.
	pending := s.pending
	s.pending = nil
	for _, e := range pending {
		s.enqueueLocked(c, outFrame{data: e.Frame, env: e})
	}
	s.notifyLocked()
	s.mu.Unlock()
	s.logf("connection %d open (%d pending events)", c.id, len(pending))

	go s.runWriter(c)
	defer s.wg.Done()
	s.runReader(c)
	c.close()
	<-c.writerDone

	s.mu.Lock()
	delete(s.conns, c.id)
	s.st.openConns--
	c.info.ClosedAt = time.Now()
	// Frames never written: their delivery attempt did not happen. Events
	// go to another open connection, or wait for the next one; a slash
	// command or interaction is lost (Slack does not retry those; the user
	// sees the failure); hello and disconnect frames are dropped.
	queued := c.queue
	c.queue = nil
	for _, f := range queued {
		switch {
		case f.env == nil:
		case f.env.Type == EnvelopeEventsAPI:
			if o := s.pickConnLocked(f.env); o != nil {
				s.enqueueLocked(o, f)
			} else {
				s.pending = append(s.pending, f.env)
			}
		default:
			s.st.lose(f.env)
		}
	}
	s.notifyLocked()
	s.mu.Unlock()
	s.logf("connection %d closed (%d frames not written)", c.id, len(queued))
}

// refuseSocket answers a WebSocket beyond the app's allowance as Slack does:
// no hello, a {"type":"disconnect","reason":"too_many_websockets"} frame,
// then the socket closes once the client has, or after the disconnect
// grace. The frame's shape is the one logged by clients
// (slackapi/bolt-js#2238); that it comes instead of hello, on the new
// socket, follows from the Node SDK receiving it "in state 'connecting'",
// before any hello (slackapi/bolt-js#2225). apps.connections.open itself
// succeeds. slack-go treats the frame as any disconnect and reconnects at
// once.
func (s *Server) refuseSocket(ws *websocket.Conn) {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-s.done:
		case <-stop:
		}
		_ = ws.Close()
	}()
	_ = ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := ws.WriteMessage(websocket.TextMessage, disconnectFrame("too_many_websockets", "applink-fake-refused")); err != nil {
		return
	}
	_ = ws.SetReadDeadline(time.Now().Add(max(s.cfg.disconnectGrace, time.Millisecond)))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			return
		}
	}
}

func disconnectFrame(reason, host string) []byte {
	b, _ := json.Marshal(map[string]any{
		"type":       "disconnect",
		"reason":     reason,
		"debug_info": map[string]any{"host": host},
	})
	return b
}

func (s *Server) helloFrameLocked(c *wsConn) []byte {
	approx := approximateConnectionTime
	if c.lifetime > 0 {
		approx = int(c.lifetime / time.Second)
	}
	b, _ := json.Marshal(map[string]any{
		"type":            "hello",
		"num_connections": s.st.openConns,
		"debug_info": map[string]any{
			"host":                        "applink-fake-" + strconv.Itoa(c.id),
			"build_number":                1,
			"approximate_connection_time": approx,
		},
		"connection_info": map[string]any{"app_id": s.cfg.appID},
	})
	return b
}

func (s *Server) enqueueLocked(c *wsConn, f outFrame) {
	c.queue = append(c.queue, f)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// popFrameLocked takes the next frame to write and marks its envelope sent.
func (s *Server) popFrameLocked(c *wsConn) (outFrame, bool) {
	if len(c.queue) == 0 {
		return outFrame{}, false
	}
	f := c.queue[0]
	c.queue[0] = outFrame{}
	c.queue = c.queue[1:]
	if len(c.queue) == 0 {
		c.queue = nil
	}
	if f.env != nil {
		f.env.SentAt, f.env.ConnID = time.Now(), c.id
		c.info.Sent++
		s.startAckTimerLocked(f.env)
		s.notifyLocked() // SentAt and ConnID are set: wake WaitFor
	}
	return f, true
}

// runWriter writes queued frames and pings until the connection closes.
func (s *Server) runWriter(c *wsConn) {
	defer s.wg.Done()
	defer close(c.writerDone)
	var ping <-chan time.Time
	if s.cfg.pingInterval > 0 {
		t := time.NewTicker(s.cfg.pingInterval)
		defer t.Stop()
		ping = t.C
	}
	var refresh <-chan time.Time
	if c.lifetime > 0 {
		t := time.NewTimer(c.lifetime)
		defer t.Stop()
		refresh = t.C
	}
	var closeAt <-chan time.Time
	sentPing := false
	for {
		select {
		case <-c.done:
			return
		case <-closeAt:
			c.close()
			return
		case <-refresh:
			s.disconnectConn(c, "refresh_requested")
		case <-ping:
			if err := c.ws.WriteControl(websocket.PingMessage, []byte(strconv.FormatInt(time.Now().Unix(), 10)), time.Now().Add(writeTimeout)); err != nil {
				c.close()
				return
			}
		case <-c.wake:
			for {
				s.mu.Lock()
				f, ok := s.popFrameLocked(c)
				s.mu.Unlock()
				if !ok {
					break
				}
				_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
				if err := c.ws.WriteMessage(websocket.TextMessage, f.data); err != nil {
					c.close()
					return
				}
				if !sentPing && s.cfg.pingInterval > 0 {
					// A first ping right after hello, so a client with a short
					// OptionPingInterval does not time out before the ticker fires.
					sentPing = true
					_ = c.ws.WriteControl(websocket.PingMessage, []byte("hello"), time.Now().Add(writeTimeout))
				}
				if f.closeAfter > 0 && closeAt == nil {
					closeAt = time.After(f.closeAfter)
				}
			}
		}
	}
}

// runReader reads the client's frames (acks) until the connection fails.
func (s *Server) runReader(c *wsConn) {
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		at := time.Now()
		if typ != websocket.TextMessage {
			s.recordFrame(c, at, data, "not a text frame")
			continue
		}
		s.handleClientFrame(c, at, data)
	}
}

func (s *Server) recordFrame(c *wsConn, at time.Time, data []byte, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.frames = append(s.st.frames, ClientFrame{At: at, ConnID: c.id, Data: data, Reason: reason})
	s.notifyLocked()
}

// handleClientFrame records an ack: {"envelope_id":"…","payload":{…}?}.
func (s *Server) handleClientFrame(c *wsConn, at time.Time, data []byte) {
	var ack struct {
		EnvelopeID *string         `json:"envelope_id"`
		Payload    json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(data, &ack); err != nil {
		s.recordFrame(c, at, data, "not JSON: "+err.Error())
		return
	}
	if ack.EnvelopeID == nil {
		s.recordFrame(c, at, data, "no envelope_id")
		return
	}
	a := Ack{EnvelopeID: *ack.EnvelopeID, At: at, ConnID: c.id, Raw: data}
	if len(ack.Payload) > 0 && string(ack.Payload) != "null" {
		a.Payload = ack.Payload
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	c.info.Acks++
	env := s.st.envByID[a.EnvelopeID]
	if env == nil {
		a.Unknown = true
	} else {
		if !env.SentAt.IsZero() {
			a.Latency = at.Sub(env.SentAt)
		}
		if len(env.Acks) == 0 {
			s.st.recordFirstAck(env)
			if t := s.timers[env.ID]; t != nil {
				t.Stop()
				delete(s.timers, env.ID)
			}
			// Slack shows a slash command's ack payload to the user.
			if env.Type == EnvelopeSlashCommands && a.Payload != nil {
				if tgt := s.targetByEnvelope(env.ID); tgt != nil {
					s.applyResponseLocked(tgt, a.Payload, "ack")
				}
			}
		}
		env.Acks = append(env.Acks, a)
	}
	s.st.acks = append(s.st.acks, a)
	s.notifyLocked()
}

// startAckTimerLocked arms the redelivery of an events_api envelope.
func (s *Server) startAckTimerLocked(env *Envelope) {
	if env.Type != EnvelopeEventsAPI || s.cfg.ackTimeout <= 0 {
		return
	}
	id := env.ID
	s.timers[id] = time.AfterFunc(s.cfg.ackTimeout, func() { s.ackTimedOut(id) })
}

// ackTimedOut redelivers an event whose envelope was not acked in time, as
// Slack does: a new envelope_id, the same event_id, retry_attempt+1 and
// retry_reason "timeout", at most maxRetries times.
func (s *Server) ackTimedOut(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	delete(s.timers, id)
	env := s.st.envByID[id]
	if env == nil || len(env.Acks) > 0 {
		return
	}
	env.TimedOut = true
	if env.RetryAttempt >= s.cfg.maxRetries {
		env.Exhausted = true
		s.logf("event %s dropped after %d retries", env.EventID, env.RetryAttempt)
	} else {
		s.routeLocked(s.retryOfLocked(env, "timeout"))
	}
	s.notifyLocked()
}

// retryOfLocked builds the next delivery attempt of an event.
func (s *Server) retryOfLocked(env *Envelope, reason string) *Envelope {
	r := &Envelope{
		ID: newUUID(), Type: env.Type, EventID: env.EventID, InnerType: env.InnerType, SubType: env.SubType,
		RetryAttempt: env.RetryAttempt + 1, RetryReason: reason,
		AcceptsResponsePayload: env.AcceptsResponsePayload, Echo: env.Echo, Payload: env.Payload, Created: time.Now(),
	}
	r.Frame = envelopeFrame(r)
	return r
}

// Redeliver sends the event again now, as a retry of its latest attempt
// (retry_attempt+1, retry_reason "timeout"), whether or not it was acked and
// regardless of the retry limit. It returns the new envelope_id.
func (s *Server) Redeliver(eventID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", ErrClosed
	}
	var last *Envelope
	for _, e := range s.st.envelopes {
		if e.EventID == eventID {
			last = e
		}
	}
	if last == nil {
		return "", fmt.Errorf("slackfake: no event %q was delivered", eventID)
	}
	r := s.retryOfLocked(last, "timeout")
	s.routeLocked(r)
	s.notifyLocked()
	return r.ID, nil
}

// envelopeFrame renders the text frame of an envelope. events_api envelopes
// carry retry_attempt and retry_reason (0 and "" on the first attempt), as
// in slack-go's own fixtures (socketmode/socketmode_test.go).
func envelopeFrame(e *Envelope) []byte {
	f := map[string]any{
		"envelope_id":              e.ID,
		"payload":                  e.Payload,
		"type":                     e.Type,
		"accepts_response_payload": e.AcceptsResponsePayload,
	}
	if e.Type == EnvelopeEventsAPI {
		f["retry_attempt"], f["retry_reason"] = e.RetryAttempt, e.RetryReason
	}
	b, _ := json.Marshal(f)
	return b
}

// routeLocked records an envelope and queues it on a connection. With no
// connection open an event waits for the next one; other envelopes fail
// with ErrNotConnected and are not recorded.
func (s *Server) routeLocked(env *Envelope) error {
	if s.closed {
		return ErrClosed
	}
	c := s.pickConnLocked(env)
	if c == nil && env.Type != EnvelopeEventsAPI {
		return ErrNotConnected
	}
	if env.Frame == nil {
		env.Frame = envelopeFrame(env)
	}
	s.st.recordEnvelope(env)
	if c != nil {
		s.enqueueLocked(c, outFrame{data: env.Frame, env: env})
		return nil
	}
	// No socket: Slack's attempt fails and a retry goes out once the app
	// reconnects. Slack's retry_reason for this case is not documented;
	// "timeout" is the only reason seen in Socket Mode logs.
	if env.RetryAttempt == 0 {
		env.Undelivered = true
		if s.cfg.maxRetries < 1 {
			env.Exhausted = true
			return nil
		}
		r := s.retryOfLocked(env, "timeout")
		s.st.recordEnvelope(r)
		env = r
	}
	s.pending = append(s.pending, env)
	return nil
}

// Disconnect sends {"type":"disconnect","reason":reason} on every open
// connection and closes each once the client has, or after the disconnect
// grace (WithDisconnectGrace). Slack's reasons: "warning" (about 10 s
// before a disconnect), "refresh_requested", "link_disabled",
// "too_many_websockets". slack-go reconnects on any of them.
func (s *Server) Disconnect(reason string) {
	s.mu.Lock()
	var conns []*wsConn
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		s.disconnectConn(c, reason)
	}
}

func (s *Server) disconnectConn(c *wsConn, reason string) {
	b := disconnectFrame(reason, "applink-fake-"+strconv.Itoa(c.id))
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.closing {
		return
	}
	c.closing = true
	c.info.Closing = true
	s.enqueueLocked(c, outFrame{data: b, closeAfter: max(s.cfg.disconnectGrace, time.Millisecond)})
	s.notifyLocked()
}

// DropConnection closes every open socket abruptly, without a close frame,
// like a network failure.
func (s *Server) DropConnection() {
	s.mu.Lock()
	var conns []*wsConn
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.NetConn().Close()
	}
}
