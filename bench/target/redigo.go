package target

import (
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/redigo"
)

func init() {
	// "redigo" is the driver's default, the pipelined mode; "redigo-pooled"
	// is its pool-checkout mode, the shape redsync and most clients use.
	register("redigo", func(addrs []string, o DialOptions) (core.Driver, func() error, error) {
		return dialRedigo(addrs, redigo.Options{Username: o.Username, Password: o.Password, TLS: o.TLS, DialTimeout: o.DialTimeout})
	})
	register("redigo-pooled", func(addrs []string, o DialOptions) (core.Driver, func() error, error) {
		return dialRedigo(addrs, redigo.Options{Username: o.Username, Password: o.Password, TLS: o.TLS, DialTimeout: o.DialTimeout,
			Pooled: true, PoolSize: o.PoolSize})
	})
}

func dialRedigo(addrs []string, opts redigo.Options) (core.Driver, func() error, error) {
	d, err := redigo.Dial(addrs, opts)
	if err != nil {
		return nil, nil, err
	}
	return d, d.Close, nil
}
