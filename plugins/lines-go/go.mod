module example.com/lines

go 1.27
