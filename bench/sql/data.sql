-- Bench data on top of the example app's seed (bench/run.sh loads it; the app seed stays small).
-- Each organization of the seed (Acme: Alice, Globex: Bob) ends with exactly one active project
-- (the first by name; the seed's others are archived) and :page_rows archived ones, so
-- list_projects answers 1 row for {"status": "active"} and :page_rows rows for {"status":
-- "archived"}, both in one page of chumbo's (page_rows 50 by default). The table stays small
-- (about 2 x (page_rows + 1) rows), so the tool's query is cheap and chumbo's own work is what the
-- comparison measures. Names start with the organization's name, so a leak shows in any response.
-- Run as the owner: psql -v page_rows=50 -f data.sql
\if :{?page_rows}
\else
  \set page_rows 50
\endif

update public.projects p set status = 'archived'
 where p.status = 'active'
   and p.id <> (select q.id from public.projects q
                 where q.org_id = p.org_id and q.status = 'active'
                 order by q.name collate "C" limit 1);

insert into public.projects (org_id, name, status, description)
select o.id,
       format('%s project %s', o.name, lpad(n::text, 5, '0')),
       'archived',
       format('%s project number %s: a description of moderate length, like a real one would have.', o.name, n)
from public.organizations o
cross join lateral generate_series(1, :page_rows - (select count(*) from public.projects p
                                                    where p.org_id = o.id and p.status = 'archived')) n;

-- What the RLS policy and the tool filter on; with so few rows the planner may still prefer a
-- sequential scan, which is then the cheaper plan.
create index if not exists projects_bench_org_status_name_idx
  on public.projects (org_id, status, name collate "C");
vacuum analyze public.organizations, public.memberships, public.projects;
