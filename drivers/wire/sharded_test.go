package wire

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlock-go/redlock/internal/redistest"
)

func TestShardChannelsShareTheKeysSlot(t *testing.T) {
	for _, key := range []string{"k", "orders:42", "{user}:a", "a{b}c", "x{y", "a}{b}", "lock{ }"} {
		for _, ch := range []string{ReleaseChannel(key), TurnChannel("8000000000000001", key)} {
			name, ok := ShardChannel(ch)
			require.True(t, ok, key)
			assert.Equal(t, slot(key), slot(name), "%q: %q", key, name)
		}
	}
	name, _ := ShardChannel(ReleaseChannel("{user}:a"))
	assert.Equal(t, ReleaseChannel("{user}:a"), name, "a tagged key's channel keeps its name")
	name, _ = ShardChannel(ReleaseChannel("k"))
	assert.Equal(t, ReleasePrefix+"{k}", name)
	_, ok := ShardChannel(ReleaseChannel("a}b"))
	assert.False(t, ok, "an untaggable key has no shard channel")
	_, ok = ShardChannel("other")
	assert.False(t, ok, "not a release's channel")
	name, _ = ShardChannel(TurnChannel("8000000000000001", "a:b"))
	assert.Equal(t, TurnPrefix+"8000000000000001:{a:b}", name, "a key with ':' after the waiter id")
	_, ok = ShardChannel(TurnPrefix + "noid")
	assert.False(t, ok, "not a channel of the key")
}

func TestHasShardedPubSub(t *testing.T) {
	for info, want := range map[string]bool{
		"# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:0\r\n":                          true,
		"# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.1\r\n": true,
		"redis_version:10.0.0\n":   true,
		"redis_version:6.2.14\r\n": false,
		"redis_version:\r\n":       false,
		"# Server\r\n":             false,
	} {
		assert.Equal(t, want, HasShardedPubSub(info), "%q", info)
	}
	srv := redistest.Start(t, redistest.Options{})
	info, err := srv.Do("INFO", "server")
	require.NoError(t, err)
	assert.True(t, HasShardedPubSub(info.(string)), "the redis-server the tests run has SPUBLISH")
}

// TestReleaseShardedOnRedis: ReleaseSharded is Release announcing with
// SPUBLISH on the shard channels, a release and a turn alike; Release
// still announces with PUBLISH.
func TestReleaseShardedOnRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Options{})
	sha, err := srv.Do("SCRIPT", "LOAD", ReleaseSharded.Src)
	require.NoError(t, err)
	assert.Equal(t, ReleaseSharded.SHA1, sha)
	assert.NotEqual(t, Release.SHA1, ReleaseSharded.SHA1)

	c, err := redis.Dial("tcp", srv.Addr)
	require.NoError(t, err)
	defer func() { _ = c.Close() }() // the test's own connection
	keys := []string{"plain", "{tag}:x"}
	var chans []any
	for _, k := range keys {
		ch, _ := ShardChannel(ReleaseChannel(k))
		chans = append(chans, ch)
	}
	turn, _ := ShardChannel(TurnChannel("w1", "plain"))
	chans = append(chans, turn)
	require.NoError(t, c.Send("SSUBSCRIBE", chans...))
	require.NoError(t, c.Flush())
	for _, ch := range chans {
		r, err := redis.Values(c.Receive())
		require.NoError(t, err)
		assert.Equal(t, []any{[]byte("ssubscribe"), []byte(ch.(string))}, r[:2], "confirmed")
	}
	for _, k := range keys {
		_, err = srv.Do("SET", k, "tok", "PX", 60000)
		require.NoError(t, err)
		n, err := srv.Do("EVALSHA", ReleaseSharded.SHA1, 1, k, "tok")
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)
		r, err := redis.Strings(c.Receive())
		require.NoError(t, err)
		want, _ := ShardChannel(ReleaseChannel(k))
		assert.Equal(t, []string{"smessage", want, "tok"}, r)
	}
	q, due := QueueKeys("plain")
	_, err = srv.Do("SET", "plain", "a", "PX", 60000)
	require.NoError(t, err)
	_, err = srv.Do("EVAL", ReleaseSharded.Src, 3, "plain", q, due, "b", "w1", 1, 60000, 500)
	require.NoError(t, err)
	_, err = srv.Do("EVAL", ReleaseSharded.Src, 3, "plain", q, due, "a", "", 0, 60000, 500)
	require.NoError(t, err)
	r, err := redis.Strings(c.Receive())
	require.NoError(t, err)
	assert.Equal(t, []string{"smessage", turn, ""}, r, "the turn, on its shard channel")

	classic := srv.Subscribe(t, ReleaseChannel("plain"))
	_, err = srv.Do("SET", "plain", "tok", "PX", 60000)
	require.NoError(t, err)
	_, err = srv.Do("EVAL", Release.Src, 1, "plain", "tok")
	require.NoError(t, err)
	assert.Equal(t, []string{ReleaseChannel("plain"), "tok"}, classic.Next(t))
}

// TestReleaseShardedStaysInTheShard: on a Cluster of 3 masters with a
// replica each, a release with Release sends its PUBLISH over the bus to
// the 5 other nodes; one with ReleaseSharded sends its SPUBLISH to the
// master's replica alone (CLUSTER INFO's message counters, summed over
// the nodes).
func TestReleaseShardedStaysInTheShard(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	sent := func(kind string) int {
		n := 0
		for _, s := range cl.Servers {
			r, err := s.Do("CLUSTER", "INFO")
			require.NoError(t, err)
			if _, after, ok := strings.Cut(r.(string), "cluster_stats_messages_"+kind+"_sent:"); ok {
				v, _, _ := strings.Cut(after, "\r\n")
				k, err := strconv.Atoi(v)
				require.NoError(t, err)
				n += k
			}
		}
		return n
	}
	const key, rounds = "measured", 100
	m := cl.MasterForKey(key)
	for _, c := range []struct {
		s                   Script
		publish, publishShd int
	}{{Release, 5 * rounds, 0}, {ReleaseSharded, 0, rounds}} {
		p0, s0 := sent("publish"), sent("publishshard")
		for range rounds {
			_, err := m.Do("SET", key, "tok")
			require.NoError(t, err)
			n, err := m.Do("EVALSHA", c.s.SHA1, 1, key, "tok")
			if IsNoScript(err) {
				n, err = m.Do("EVAL", c.s.Src, 1, key, "tok")
			}
			require.NoError(t, err)
			require.Equal(t, int64(1), n)
		}
		assert.Equal(t, c.publish, sent("publish")-p0, "PUBLISH messages on the bus")
		assert.Equal(t, c.publishShd, sent("publishshard")-s0, "SPUBLISH messages on the bus")
	}
}

// TestKindReleasesShardedOnRedis: the releases that announce beyond the
// mutex's, a reader's (once no reader is left) and a multi-key lock's
// (each key it frees), announce with SPUBLISH on the shard channels in
// their sharded variants.
func TestKindReleasesShardedOnRedis(t *testing.T) {
	for _, s := range []struct{ plain, sharded Script }{{ReadRelease, ReadReleaseSharded}, {AllRelease, AllReleaseSharded}, {WriteRelease, WriteReleaseSharded}} {
		require.NotEqual(t, s.plain.Src, s.sharded.Src, "the sharded variant replaced its channel lines")
		assert.Contains(t, s.sharded.Src, `local publish = "SPUBLISH"`)
	}
	srv := redistest.Start(t, redistest.Options{})
	c, err := redis.Dial("tcp", srv.Addr)
	require.NoError(t, err)
	defer func() { _ = c.Close() }() // the test's own connection
	keys := []string{"rw", "{tag}:a", "b"}
	var chans []any
	for _, k := range keys {
		ch, _ := ShardChannel(ReleaseChannel(k))
		chans = append(chans, ch)
	}
	require.NoError(t, c.Send("SSUBSCRIBE", chans...))
	require.NoError(t, c.Flush())
	for range chans {
		_, err := redis.Values(c.Receive())
		require.NoError(t, err)
	}
	next := func() []string {
		r, err := redis.Strings(c.Receive())
		require.NoError(t, err)
		return r
	}
	readers := "redlock:readers:rw"
	_, err = srv.Do("ZADD", readers, 1<<50, "t1", 1<<50, "t2")
	require.NoError(t, err)
	for _, tk := range []string{"t1", "t2"} {
		n, err := srv.Do("EVAL", ReadReleaseSharded.Src, 2, "rw", readers, tk)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)
	}
	assert.Equal(t, []string{"smessage", chans[0].(string), "t2"}, next(), "the last reader's release alone")
	for _, k := range keys[1:] {
		_, err = srv.Do("SET", k, "tok", "PX", 60000)
		require.NoError(t, err)
	}
	n, err := srv.Do("EVAL", AllReleaseSharded.Src, 2, "{tag}:a", "b", "tok")
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	assert.Equal(t, []string{"smessage", chans[1].(string), "tok"}, next())
	assert.Equal(t, []string{"smessage", chans[2].(string), "tok"}, next())
}
