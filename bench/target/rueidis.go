package target

import (
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/rueidis"
)

func init() {
	register("rueidis", func(addrs []string, o DialOptions) (core.Driver, func() error, error) {
		d, err := rueidis.Dial(addrs, rueidis.Options{Username: o.Username, Password: o.Password, TLS: o.TLS, DialTimeout: o.DialTimeout})
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	})
}
