package target

import (
	"github.com/redlock-go/redlock/core"
	"github.com/redlock-go/redlock/drivers/valkeygo"
)

func init() {
	register("valkeygo", func(addrs []string, o DialOptions) (core.Driver, func() error, error) {
		d, err := valkeygo.Dial(addrs, valkeygo.Options{Username: o.Username, Password: o.Password, TLS: o.TLS, DialTimeout: o.DialTimeout})
		if err != nil {
			return nil, nil, err
		}
		return d, d.Close, nil
	})
}
