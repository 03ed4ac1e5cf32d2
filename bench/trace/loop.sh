n=0
for i in $(seq 200); do
  x=$(echo $i | tr 0-9 a-j)
  ( n=$((n+1)); : )
  n=$((n+${#x}))
done
echo "n=$n"
