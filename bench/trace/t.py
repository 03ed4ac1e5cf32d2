import json, re, hashlib
d = {}
for i in range(20000):
    d["k%d" % i] = [i, str(i), {"x": i * 2}]
s = json.dumps(d, sort_keys=True)
h = hashlib.sha1(s.encode()).hexdigest()
try:
    for i in range(1000):
        try:
            raise ValueError(i)
        except ValueError as e:
            pass
except Exception:
    pass
print(h, len(re.findall(r"k\d+7", s)), sum(len(v[1]) for v in d.values()))
