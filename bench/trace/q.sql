create table t(a,b);
with recursive c(x) as (select 1 union all select x+1 from c where x<20000) insert into t select x, x*x from c;
select count(*), sum(b) from t where a%7=3;
select a from t order by b desc limit 3;
