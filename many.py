import socket, time
ss = []
t = time.time()
for i in range(200):
    s = socket.create_connection(("127.0.0.1", 8081)); s.sendall(b"x"); ss.append(s)
for s in ss: s.settimeout(5); s.recv(10)
print("200 conns echoed in %.2fs" % (time.time() - t))
time.sleep(4)
