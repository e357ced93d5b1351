-- A stamp of each type in $1 as sql/reflect.sql sees it (chumbo._type_info: names, enum labels,
-- element and base types), so a renamed type or a new enum label reflects its functions again.
select t::int8, md5(chumbo._type_info(t)::text) from unnest($1::oid[]) as t
