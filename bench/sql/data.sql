-- Bench data on top of the example app's seed (bench/run.sh loads it; the app seed stays small):
-- :projects_per_org projects in each organization of the seed (Acme: Alice, Globex: Bob), the
-- seed's 3 included, 2% of them archived. Names start with the organization's name, so a leak
-- shows in any response. Run as the owner: psql -v projects_per_org=3000 -f data.sql
\if :{?projects_per_org}
\else
  \set projects_per_org 3000
\endif

insert into public.projects (org_id, name, status, description)
select o.id,
       format('%s project %s', o.name, lpad(n::text, 5, '0')),
       case when n % 50 = 0 then 'archived' else 'active' end,
       format('%s project number %s: a description of moderate length, like a real one would have.', o.name, n)
from public.organizations o
cross join lateral generate_series(1, :projects_per_org - (select count(*) from public.projects p where p.org_id = o.id)) n;

analyze public.organizations, public.memberships, public.projects;
