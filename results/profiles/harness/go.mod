module github.com/redlock-go/redlock/results/profiles/harness

go 1.26.8

require (
	github.com/go-redsync/redsync/v4 v4.18.0
	github.com/gomodule/redigo v1.9.3
	github.com/redlock-go/redlock v0.0.0
)

require go.uber.org/goleak v1.3.0 // indirect

replace github.com/redlock-go/redlock => ../../..
