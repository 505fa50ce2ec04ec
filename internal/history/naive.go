package history

import (
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Dial connects to one Redis server on loopback, with timeouts so that a
// test never blocks on a hung server.
func Dial(addr string) (redis.Conn, error) {
	return redis.Dial("tcp", addr,
		redis.DialConnectTimeout(5*time.Second),
		redis.DialReadTimeout(5*time.Second),
		redis.DialWriteTimeout(5*time.Second))
}

// Each naive lock is one client's view of one key on one server, with its
// commands as separate methods so that a test can interleave clients
// command by command. The seed's "Seconds" become milliseconds (PEXPIRE, PX)
// so that expiry takes a fraction of a second; nothing else depends on it.

// V10 is "SETNX Key 1; EXPIRE Key Seconds", released by DEL.
//
// The seed's pseudo-code runs EXPIRE unconditionally; the usual form, which
// the seed's complaint ("the lock can never expire") is about, sets the
// expiry only after winning, so that a loser does not push the holder's
// expiry back. That is what TryLock does.
type V10 struct {
	Conn redis.Conn
	Key  string
	TTL  time.Duration
}

// SetNX is the first command: SETNX Key 1.
func (l V10) SetNX() (bool, error) { return redis.Bool(l.Conn.Do("SETNX", l.Key, 1)) }

// Expire is the second command: PEXPIRE Key TTL.
func (l V10) Expire() error {
	_, err := l.Conn.Do("PEXPIRE", l.Key, l.TTL.Milliseconds())
	return err
}

// TryLock is SetNX, then Expire if it won: two round trips.
func (l V10) TryLock() (bool, error) {
	ok, err := l.SetNX()
	if ok && err == nil {
		err = l.Expire()
	}
	return ok && err == nil, err
}

// Release is DEL Key, whoever holds it.
func (l V10) Release() error { return del(l.Conn, l.Key) }

// V11 is the GETSET lock: no EXPIRE; the value is the holder's expiry time,
// read on the client's clock, and a client that finds it past takes the lock
// over with GETSET if nobody did between its GET and its GETSET. Released by
// DEL. Times are Unix milliseconds. (The seed's pseudo-code lost its
// comparison "oldExpireTime < CurrentTimestamp" in transcription; its
// prose, followed here, is the usual form.)
type V11 struct {
	Conn  redis.Conn
	Key   string
	TTL   time.Duration
	Clock func() int64 // this client's clock, Unix ms

	// Until is the expiry this client wrote when it last won: it believes it
	// holds the lock while its clock reads less.
	Until int64
}

// NewExpireTime is CurrentTimestamp + ExpireSeconds on this client's clock.
func (l *V11) NewExpireTime() int64 { return l.Clock() + l.TTL.Milliseconds() }

// SetNX is SETNX Key NewExpireTime; it wins a free key.
func (l *V11) SetNX(expireAt int64) (bool, error) {
	ok, err := redis.Bool(l.Conn.Do("SETNX", l.Key, expireAt))
	if ok {
		l.Until = expireAt
	}
	return ok, err
}

// Get is GET Key: the holder's expiry (oldExpireTime).
func (l *V11) Get() (int64, error) { return redis.Int64(l.Conn.Do("GET", l.Key)) }

// GetSet is GETSET Key NewExpireTime. It wins when the value it replaced is
// old, the value Get saw; it writes expireAt either way.
func (l *V11) GetSet(expireAt, old int64) (bool, error) {
	cur, err := redis.Int64(l.Conn.Do("GETSET", l.Key, expireAt))
	if err != nil {
		return false, err
	}
	if cur == old {
		l.Until = expireAt
		return true, nil
	}
	return false, nil
}

// TryLock is SetNX; failing that, Get, and GetSet if the holder's time is
// past on this client's clock.
func (l *V11) TryLock() (bool, error) {
	if ok, err := l.SetNX(l.NewExpireTime()); ok || err != nil {
		return ok, err
	}
	old, err := l.Get()
	if err != nil || old >= l.Clock() {
		return false, err
	}
	return l.GetSet(l.NewExpireTime(), old)
}

// Holds reports whether this client believes it holds the lock: it won and
// its clock has not reached the expiry it wrote.
func (l *V11) Holds() bool { return l.Until != 0 && l.Clock() < l.Until }

// Release is DEL Key, whoever holds it.
func (l *V11) Release() error { return del(l.Conn, l.Key) }

// V20 is "SET Key 1 NX EX Seconds" (SETNX with an expiry, one command),
// released by DEL.
type V20 struct {
	Conn redis.Conn
	Key  string
	TTL  time.Duration
}

// TryLock is SET Key 1 NX PX TTL.
func (l V20) TryLock() (bool, error) { return setNX(l.Conn, l.Key, "1", l.TTL) }

// Release is DEL Key, whoever holds it.
func (l V20) Release() error { return del(l.Conn, l.Key) }

// V30 is "SET Key UnixTimestamp NX EX Seconds", released by a Lua script
// that deletes the key only if it still holds this client's timestamp.
type V30 struct {
	Conn  redis.Conn
	Key   string
	TTL   time.Duration
	Clock func() int64 // this client's clock, Unix seconds

	// Value is the timestamp this client wrote when it last won.
	Value string
}

// TryLock is SET Key <Unix seconds> NX PX TTL.
func (l *V30) TryLock() (bool, error) {
	v := strconv.FormatInt(l.Clock(), 10)
	ok, err := setNX(l.Conn, l.Key, v, l.TTL)
	if ok {
		l.Value = v
	}
	return ok, err
}

// Release compare-and-deletes on the timestamp; it reports whether it
// deleted the key.
func (l *V30) Release() (bool, error) { return compareAndDelete(l.Conn, l.Key, l.Value) }

// V31 is "SET Key UniqId NX EX Seconds" with the V3.0 release: safe on one
// server. UniqId is the client's name and a counter it increments per
// attempt, unique without reading a clock.
type V31 struct {
	Conn redis.Conn
	Key  string
	TTL  time.Duration
	Name string // unique per client

	n     int
	Value string // the id this client wrote when it last won
}

// TryLock is SET Key <Name>:<n> NX PX TTL, with a new n each time.
func (l *V31) TryLock() (bool, error) {
	l.n++
	v := l.Name + ":" + strconv.Itoa(l.n)
	ok, err := setNX(l.Conn, l.Key, v, l.TTL)
	if ok {
		l.Value = v
	}
	return ok, err
}

// Release compare-and-deletes on the id; it reports whether it deleted the
// key.
func (l *V31) Release() (bool, error) { return compareAndDelete(l.Conn, l.Key, l.Value) }

func setNX(c redis.Conn, key, value string, ttl time.Duration) (bool, error) {
	r, err := c.Do("SET", key, value, "NX", "PX", ttl.Milliseconds())
	return r != nil && err == nil, err
}

func del(c redis.Conn, key string) error {
	_, err := c.Do("DEL", key)
	return err
}

// releaseScript is the seed's V3.0/V3.1 release.
var releaseScript = redis.NewScript(1, `
if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("del", KEYS[1])
else
	return 0
end`)

func compareAndDelete(c redis.Conn, key, value string) (bool, error) {
	return redis.Bool(releaseScript.Do(c, key, value))
}
