module github.com/redlock-go/redlock

go 1.26.8
